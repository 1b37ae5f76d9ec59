#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/runtime/detail/executor.hpp>
#ifdef MULTIGPU_TESTING
#include <multigpu/testing/group_hooks.hpp>
#endif

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/observer.hpp>
#include <multigpu/memory/detail/host_stager.hpp>
#include <multigpu/memory/device_buffer.hpp>

#include <multigpu/runtime/detail/peer_registry.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <vector>

namespace multigpu {
namespace {

std::string format_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(unit == 0 ? 0 : 1) << value << ' ' << units[unit];
  return out.str();
}

int device_count_or_throw() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();
    throw std::runtime_error(detail::concat(
        "multigpu: no CUDA device is visible (cudaGetDeviceCount: ", cudaGetErrorName(status),
        "); check the driver and CUDA_VISIBLE_DEVICES"));
  }
  MULTIGPU_CUDA_TRY(status);
  if (count == 0) throw std::runtime_error("multigpu: no CUDA device is visible");
  return count;
}

}  // namespace

namespace detail {
#ifdef MULTIGPU_TESTING
namespace {
// testing::fail_group_constructions: how many more group constructions fail on purpose.
std::atomic<int> failing_constructions{0};
}  // namespace
#endif

group_resources::group_resources(std::vector<int> devices, group_options options)
    : slot_devices_(std::move(devices)), options_(options) {
  MULTIGPU_EXPECTS(!slot_devices_.empty(),
                   "device_group: the list of device ids is empty; name at least one device");
  // Option checks that need no device come first, so that they hold on any machine.
  if (!options_.resources.empty()) {
    MULTIGPU_EXPECTS(options_.resources.size() == slot_devices_.size(),
                     concat("device_group: group_options::resources has ", options_.resources.size(),
                            " resource(s) for ", slot_devices_.size(), " slot(s); give one per slot"));
    MULTIGPU_EXPECTS(options_.storage != storage::managed,
                     "device_group: group_options::resources and storage::managed exclude each other: "
                     "segments come either from the resources or from cudaMallocManaged");
  }
  const int visible = device_count_or_throw();
  for (int id : slot_devices_)
    MULTIGPU_EXPECTS(id >= 0 && id < visible,
                     concat("device_group: device id ", id, " is invalid: ", visible,
                            " device(s) are visible, so ids run from 0 to ", visible - 1));
  for (int id : slot_devices_) {
    int unified = 0;
    MULTIGPU_CUDA_TRY(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, id));
    MULTIGPU_EXPECTS(unified != 0, concat("device_group: device ", id,
                                          " lacks unified virtual addressing, which multigpu needs"));
  }
  if (options_.storage == storage::managed) {
    for (int id : slot_devices_) {
      int concurrent = 0;
      MULTIGPU_CUDA_TRY(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, id));
      MULTIGPU_EXPECTS(concurrent != 0,
                       concat("device_group: storage::managed needs concurrent managed access, which device ",
                              id, " lacks (cudaDevAttrConcurrentManagedAccess is 0: a GPU older than "
                              "Pascal, Windows, or a virtual GPU); use storage::pooled"));
    }
  }
  links_ = peer_matrix(static_cast<std::size_t>(visible));

  // One pool per distinct device, one non-blocking stream per slot.
  for (int id : slot_devices_) {
    if (std::none_of(owned_.begin(), owned_.end(), [&](const owned_device& o) { return o.device == id; }))
      owned_.push_back({id, std::make_unique<device_pool>(id), std::make_unique<device_pool>(id)});
  }
  streams_.reserve(slot_devices_.size());
  if (options_.streams.empty()) {
    for (int id : slot_devices_) streams_.emplace_back(id);
  } else {
    MULTIGPU_EXPECTS(options_.streams.size() == slot_devices_.size(),
                     concat("device_group: group_options::streams has ", options_.streams.size(),
                            " stream(s) for ", slot_devices_.size(), " slot(s); give one per slot"));
    for (std::size_t s = 0; s < slot_devices_.size(); ++s) {
      cudaStream_t user = options_.streams[s];
      MULTIGPU_EXPECTS(user != nullptr && user != cudaStreamLegacy && user != cudaStreamPerThread,
                       concat("device_group: the stream for slot ", s,
                              " is a default stream; give a stream made with cudaStreamCreate on device ",
                              slot_devices_[s]));
      int owner = -1;
      const cudaError_t status = cudaStreamGetDevice(user, &owner);
      if (status != cudaSuccess) {
        (void)cudaGetLastError();  // the error is the caller's bad handle, reported below
        throw std::invalid_argument(concat("device_group: the stream for slot ", s,
                                           " is not a valid stream (cudaStreamGetDevice: ",
                                           cudaGetErrorName(status), ")"));
      }
      MULTIGPU_EXPECTS(owner == slot_devices_[s],
                       concat("device_group: the stream for slot ", s, " belongs to device ", owner,
                              " but the slot is on device ", slot_devices_[s]));
      streams_.push_back(multigpu::stream::borrow(slot_devices_[s], user));
    }
  }
  for (const auto& st : streams_) raw_streams_.push_back(st.get());

  // Should anything below throw, peers_ gives the access it holds back as it is destroyed.
  if (options_.peers == peer_policy::automatic) enable_peers();
#ifdef MULTIGPU_TESTING
  if (failing_constructions.load() > 0) {
    failing_constructions.fetch_sub(1);
    throw std::runtime_error("device_group: construction failed on purpose (multigpu::testing::fail_group_constructions)");
  }
#endif
  {
    std::vector<device_pool*> scratch_pools;
    for (std::size_t s = 0; s < slot_devices_.size(); ++s) {
      for (const auto& o : owned_)
        if (o.device == slot_devices_[s]) scratch_pools.push_back(o.scratch.get());
    }
    scratch_ = std::make_unique<group_scratch>(slot_devices_, raw_streams_, scratch_pools);
    sync_ = std::make_unique<collective_sync>(slot_devices_, raw_streams_);
  }
  reduction_merge_ = choose_merge_route(options_.merge, options_.peers, slot_devices_, 0, links_, merge_kind::reduction);
  scan_merge_ = choose_merge_route(options_.merge, options_.peers, slot_devices_, 0, links_, merge_kind::scan);
}

void peer_holds::release() noexcept {
  for (auto [from, to] : pairs_) peer_registry::instance().release(from, to);
  pairs_.clear();
}

void group_resources::enable_peers() {
  auto& registry = peer_registry::instance();
  peers_.reserve(owned_.size() * owned_.size());
  for (const auto& a : owned_) {
    for (const auto& b : owned_) {
      if (a.device == b.device) continue;
      peer_link& link = links_.at(a.device, b.device);
      link.can_access = registry.can_access(a.device, b.device);
      if (!link.can_access) continue;
      link.enabled = registry.acquire(a.device, b.device);
      if (!link.enabled) continue;
      peers_.add(a.device, b.device);
      // Pool memory is not covered by peer access: grant it explicitly.
      b.pool->grant_access(a.device);
      b.scratch->grant_access(a.device);
    }
  }
  for (auto [from, to] : peers_.pairs()) verify_peer(from, to);
}

void group_resources::verify_peer(int from, int to) {
  // Links have been seen to report success and deliver wrong data: copy a known pattern
  // from `to`'s pool into `from`'s pool over the link and compare it byte for byte. A pair
  // that fails is demoted to host staging and the report says so.
  constexpr std::size_t bytes = std::size_t{1} << 20;
  std::vector<unsigned char> pattern(bytes), back(bytes, 0);
  for (std::size_t i = 0; i < bytes; ++i)
    pattern[i] = static_cast<unsigned char>((i * 131u + 7u) ^ (i >> 9));
  auto slot_of = [&](int device) {
    return static_cast<std::size_t>(
        std::find(slot_devices_.begin(), slot_devices_.end(), device) - slot_devices_.begin());
  };
  cudaStream_t s_from = stream(slot_of(from));
  cudaStream_t s_to = stream(slot_of(to));
  device_pool& pool_from = pool_of_device(from);
  device_pool& pool_to = pool_of_device(to);
  void* source = pool_to.allocate(bytes, s_to);
  void* target = nullptr;
  bool ok = false;
  try {
    target = pool_from.allocate(bytes, s_from);
    {
      device_guard guard(to);
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(source, pattern.data(), bytes, cudaMemcpyHostToDevice, s_to));
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(s_to));
    }
    device_guard guard(from);
    MULTIGPU_CUDA_TRY(cudaMemcpyPeerAsync(target, from, source, to, bytes, s_from));
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(back.data(), target, bytes, cudaMemcpyDeviceToHost, s_from));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(s_from));
    ok = std::memcmp(pattern.data(), back.data(), bytes) == 0 &&
         !peer_registry::instance().forced_failure(from, to);
  } catch (...) {
    pool_to.deallocate(source, s_to);
    pool_from.deallocate(target, s_from);
    throw;
  }
  pool_to.deallocate(source, s_to);
  pool_from.deallocate(target, s_from);
  links_.at(from, to).verified = ok;
  peer_registry::instance().set_verified(from, to, ok);
}

group_resources::~group_resources() {
  // Teardown order: finish all work, return staging memory and pools, then give back the
  // peer access this group holds, and last destroy events and streams (members below).
  // The executor (which keeps this alive) is gone already: its worker threads stopped, and
  // its graphs went before the scratch they point into.
  for (std::size_t s = 0; s < streams_.size(); ++s) MULTIGPU_CUDA_REPORT(cudaStreamSynchronize(stream(s)));
  scratch_.reset();
  sync_.reset();
  stager_.reset();
  staging_.release_free();
  owned_.clear();
  peers_.release();
}

device_pool& group_resources::pool(std::size_t slot) const { return pool_of_device(device(slot)); }

device_pool& group_resources::pool_of_device(int device) const {
  for (const auto& o : owned_)
    if (o.device == device) return *o.pool;
  throw std::invalid_argument(concat("multigpu: device ", device, " is not in this group"));
}

host_stager& group_resources::stager() {
  std::lock_guard lock(stager_mutex_);
  if (!stager_) stager_ = host_stager::shared();
  return *stager_;
}

copy_route group_resources::route_between(std::size_t from, std::size_t to) const {
  return choose_route(options_.peers, device(from), device(to), links_);
}

void group_resources::order(std::size_t producer, std::size_t consumer) {
  if (producer == consumer) return;
  events_.order(device(producer), stream(producer), stream(consumer));
}

void group_resources::wait(cudaEvent_t event) {
  MULTIGPU_EXPECTS(event != nullptr, "device_group::wait: the event is null");
  device_guard guard(device(0));
  for (std::size_t s = 0; s < size(); ++s) {
    guard.set(device(s));
    MULTIGPU_CUDA_TRY(cudaStreamWaitEvent(stream(s), event, 0));
    observe_wait(stream(s), event);
  }
}

void group_resources::record(cudaEvent_t event, std::size_t slot) {
  MULTIGPU_EXPECTS(event != nullptr, "device_group::record: the event is null");
  // Every other slot's work so far joins `slot`'s stream (a pooled event each, skipped for
  // slots that share its stream); then one record covers it all.
  for (std::size_t s = 0; s < size(); ++s)
    if (s != slot) order(s, slot);
  device_guard guard(device(slot));
  MULTIGPU_CUDA_TRY(cudaEventRecord(event, stream(slot)));
  observe_record(event, stream(slot));
}

void group_resources::join(std::span<const std::size_t> slots) {
  if (slots.size() < 2) return;
  std::vector<event_pool::handle> at(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    device_guard guard(device(slots[i]));
    at[i] = events_.record(device(slots[i]), stream(slots[i]));
  }
  for (std::size_t i = 0; i < slots.size(); ++i) {
    device_guard guard(device(slots[i]));
    for (std::size_t j = 0; j < slots.size(); ++j)  // slots may share a user's stream
      if (j != i && stream(slots[j]) != stream(slots[i])) at[j].order_before(stream(slots[i]));
  }
}

void group_resources::synchronize() const {
  for (std::size_t s = 0; s < streams_.size(); ++s) MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream(s)));
}

std::string group_resources::describe() const {
  std::ostringstream out;
  out << "multigpu device group: " << size() << " slot(s) on " << owned_.size()
      << " device(s); peer policy "
      << (options_.peers == peer_policy::automatic ? "automatic" : "host staged")
      << "; partials of reductions meet in " << to_string(reduction_merge_) << " memory, of scans in "
      << to_string(scan_merge_) << " memory"
      << (options_.resources.empty() ? "" : "; vector segments from the user's memory resources") << "\n";
  for (std::size_t s = 0; s < size(); ++s) {
    cudaDeviceProp prop{};
    MULTIGPU_CUDA_TRY(cudaGetDeviceProperties(&prop, device(s)));
    char bus[32] = {};
    MULTIGPU_CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof(bus), device(s)));
    out << "  slot " << s << ": device " << device(s) << " " << prop.name << ", "
        << format_bytes(prop.totalGlobalMem) << ", compute capability " << prop.major << "."
        << prop.minor << ", " << prop.multiProcessorCount << " SMs, PCI " << bus << "\n";
  }
  if (owned_.size() > 1) {
    out << "  peer links (row: from, column: to): S supported, E enabled, V verified, "
           "'host' staged through pinned memory\n        ";
    for (const auto& b : owned_) out << std::setw(8) << b.device;
    out << "\n";
    for (const auto& a : owned_) {
      out << "  " << std::setw(6) << a.device;
      for (const auto& b : owned_) {
        std::string cell;
        if (a.device == b.device) {
          cell = "-";
        } else {
          const peer_link& l = links_.at(a.device, b.device);
          if (l.can_access) cell += "S";
          if (l.enabled) cell += "E";
          if (l.verified) cell += "V";
          if (!l.usable() || options_.peers == peer_policy::host_staged)
            cell += cell.empty() ? "host" : "/host";
        }
        out << std::setw(8) << cell;
      }
      out << "\n";
    }
    for (const auto& a : owned_)
      for (const auto& b : owned_)
        if (a.device != b.device && links_.at(a.device, b.device).enabled &&
            !links_.at(a.device, b.device).verified)
          out << "  warning: peer link " << a.device << " -> " << b.device
              << " failed its data check and is demoted to host staging\n";
  }
  for (const auto& o : owned_) {
    pool_usage u = o.pool->usage();
    out << "  pool of device " << o.device << ": " << format_bytes(u.used_bytes) << " in use, "
        << format_bytes(u.reserved_bytes) << " reserved (peak " << format_bytes(u.peak_used_bytes)
        << " in use)\n";
  }
  out << "  pinned staging memory: " << format_bytes(staging_.held_bytes()) << "\n";
  out << "  executor scratch: " << format_bytes(scratch_->device_bytes()) << " on devices, "
      << format_bytes(scratch_->host_bytes()) << " pinned\n";
  return out.str();
}

}  // namespace detail

// ---- device_group --------------------------------------------------------------------

device_group device_group::all(group_options options) {
  std::vector<int> ids(static_cast<std::size_t>(device_count_or_throw()));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
  return device_group(std::move(ids), options);
}

device_group::device_group(std::vector<int> device_ids, group_options options)
    : resources_(std::make_shared<detail::group_resources>(std::move(device_ids), options)),
      executor_(detail::make_executor(options.dispatch, resources_)) {}

std::size_t device_group::size() const { return resources_->size(); }
int device_group::device(std::size_t slot) const {
  MULTIGPU_EXPECTS_AS(slot < size(), std::out_of_range,
                      detail::concat("device_group: slot ", slot, " is out of range for a group of ",
                                     size(), " slots"));
  return resources_->device(slot);
}
cudaStream_t device_group::stream(std::size_t slot) const {
  (void)device(slot);
  return resources_->stream(slot);
}
const std::vector<int>& device_group::devices() const { return resources_->devices(); }
const group_options& device_group::options() const { return resources_->options(); }
bool device_group::peer_enabled(std::size_t from, std::size_t to) const {
  return route_between(from, to).kind == route::peer;
}
copy_route device_group::route_between(std::size_t from, std::size_t to) const {
  (void)device(from);
  (void)device(to);
  return resources_->route_between(from, to);
}
peer_link device_group::link(std::size_t from, std::size_t to) const {
  const int a = device(from);
  const int b = device(to);
  if (a == b) return {};
  return resources_->links().at(a, b);
}
merge_route device_group::merge(merge_kind kind) const { return resources_->merge(kind); }
device_pool& device_group::pool(std::size_t slot) const {
  (void)device(slot);
  return resources_->pool(slot);
}
device_resource_ref device_group::segment_resource(std::size_t slot) const {
  (void)device(slot);
  const group_options& o = options();
  if (o.storage == storage::managed) return device_resource_ref{managed_resource::instance()};
  if (!o.resources.empty()) return o.resources[slot];
  return device_resource_ref{resources_->pool(slot).resource()};
}
void device_group::order(std::size_t producer, std::size_t consumer) const {
  (void)device(producer);
  (void)device(consumer);
  resources_->order(producer, consumer);
}
std::size_t device_group::scratch_bytes() const { return resources_->scratch().device_bytes(); }

void device_group::synchronize() const { resources_->synchronize(); }
void device_group::wait(cudaEvent_t event) const { resources_->wait(event); }
void device_group::record(cudaEvent_t event, std::size_t slot) const {
  (void)device(slot);
  resources_->record(event, slot);
}
std::string device_group::describe() const { return resources_->describe(); }

device_group default_group() {
  static device_group group = device_group::all();
  return group;
}

int visible_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

#ifdef MULTIGPU_TESTING
namespace testing {
void fail_peer_verification(int from, int to, bool fail) {
  detail::peer_registry::instance().set_forced_failure(from, to, fail);
}

void fail_group_constructions(int count) { detail::failing_constructions.store(count < 0 ? 0 : count); }

int peer_access_holders(int from, int to) { return detail::peer_registry::instance().holders(from, to); }
}  // namespace testing
#endif

}  // namespace multigpu
