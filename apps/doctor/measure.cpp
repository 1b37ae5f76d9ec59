#include "measure.hpp"

#include "spin_kernel.hpp"

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/event.hpp>
#include <multigpu/core/stream.hpp>
#include <multigpu/runtime/device_group.hpp>
#include <multigpu/transfer/device_copy.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>

namespace multigpu::doctor {
namespace {

using clock_type = std::chrono::steady_clock;

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

struct timing {
  double gpu_ms = 0;        ///< median time on the GPU, between two events
  double host_blocked = 0;  ///< median time the host spent enqueuing, over gpu_ms, at most 1
};

// Times the work `enqueue` puts on `stream` (of `device`) between two timing events: one
// warm-up run (first-touch costs, lazy module and staging set-up), then `repetitions` runs
// whose medians count. Sync calls such as cudaMemcpy go on the legacy default stream.
template <class Enqueue>
timing time_on_stream(int device, cudaStream_t stream, int repetitions, Enqueue&& enqueue) {
  device_guard guard(device);
  event start(device, cudaEventDefault);
  event stop(device, cudaEventDefault);
  std::vector<double> gpu, blocked;
  for (int run = -1; run < repetitions; ++run) {
    start.record(stream);
    const auto t0 = clock_type::now();
    enqueue();
    const double host_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    stop.record(stream);
    stop.synchronize();
    if (run < 0) continue;
    const double ms = event::elapsed_ms(start, stop);
    gpu.push_back(ms);
    blocked.push_back(ms > 0 ? std::min(host_ms / ms, 1.0) : 0.0);
  }
  return {median(gpu), median(blocked)};
}

// The host-staged route of `group` from slot `from` to slot `to`, through the library's own
// transfer layer. Both timing events sit on the destination's stream (elapsed time needs
// events of one device); the source's stream waits for the start so that no download runs
// early.
double time_staged(const device_group& group, std::size_t from, std::size_t to, const void* source,
                   void* destination, std::size_t bytes, int repetitions) {
  const int device = group.device(to);
  device_guard guard(device);
  event start(device, cudaEventDefault);
  event stop(device, cudaEventDefault);
  const transfer::byte_move move{from, source, to, destination, bytes};
  std::vector<double> times;
  for (int run = -1; run < repetitions; ++run) {
    start.record(group.stream(to));
    start.order_before(group.stream(from));
    transfer::copy_between(group, group, std::span(&move, 1));
    stop.record(group.stream(to));
    stop.synchronize();
    if (run >= 0) times.push_back(event::elapsed_ms(start, stop));
  }
  group.synchronize();
  return median(times);
}

// Long enough (about 5 ms at 2 GHz) that launch latency is noise in the calibration.
constexpr long long calibration_cycles = 10'000'000;

}  // namespace

device_memory::device_memory(int device, std::size_t bytes) : device_(device) {
  device_guard guard(device);
  MULTIGPU_CUDA_TRY(cudaMalloc(&data_, bytes));
}

device_memory::~device_memory() {
  if (!data_) return;
  int previous = 0;
  if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device_) == cudaSuccess) {
    MULTIGPU_CUDA_REPORT(cudaFree(data_));
    MULTIGPU_CUDA_REPORT(cudaSetDevice(previous));
  }
}

measurement_bench::measurement_bench(device_group group, std::size_t bytes, int repetitions)
    : group_(std::move(group)),
      bytes_(bytes),
      repetitions_(repetitions),
      pageable_(new std::byte[bytes]),
      pinned_(bytes, pinned_buffer::mapping::none) {
  MULTIGPU_EXPECTS(bytes > 0 && repetitions > 0,
                   "measurement_bench: the transfer size and the repetitions must be positive");
  // Fault the pageable pages in now, so that no copy pays for first touch.
  std::memset(pageable_.get(), 1, bytes);
  std::memset(pinned_.data(), 1, bytes);
  for (std::size_t slot = 0; slot < group_.size(); ++slot) {
    const int id = group_.device(slot);
    if (std::any_of(devices_.begin(), devices_.end(), [&](const device_buffers& b) { return b.device == id; }))
      continue;
    devices_.push_back({id, slot, std::make_unique<device_memory>(id, bytes),
                        std::make_unique<device_memory>(id, bytes)});
    device_guard guard(id);
    MULTIGPU_CUDA_TRY(cudaMemset(devices_.back().source->data(), 2, bytes));
  }
}

measurement_bench::~measurement_bench() = default;

const measurement_bench::device_buffers& measurement_bench::buffers_of(int device) const {
  for (const device_buffers& b : devices_)
    if (b.device == device) return b;
  throw std::invalid_argument("multigpu-doctor: device " + std::to_string(device) + " is not measured");
}

std::vector<host_copy_measurement> measurement_bench::host_copies() {
  std::vector<host_copy_measurement> out;
  for (const device_buffers& b : devices_) {
    const cudaStream_t stream = group_.stream(b.slot);
    for (copy_direction direction : {copy_direction::host_to_device, copy_direction::device_to_host}) {
      const bool to_device = direction == copy_direction::host_to_device;
      auto copy = [&](void* host, cudaStream_t on, bool async) {
        void* target = to_device ? b.destination->data() : host;
        const void* origin = to_device ? host : b.source->data();
        const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        if (async)
          MULTIGPU_CUDA_TRY(cudaMemcpyAsync(target, origin, bytes_, kind, on));
        else
          MULTIGPU_CUDA_TRY(cudaMemcpy(target, origin, bytes_, kind));
      };
      void* pageable = pageable_.get();
      void* pinned = pinned_.data();
      // cudaMemcpy runs on the legacy default stream: the events go there too.
      const timing pageable_sync = time_on_stream(b.device, cudaStreamLegacy, repetitions_,
                                                  [&] { copy(pageable, cudaStreamLegacy, false); });
      const timing pageable_async = time_on_stream(b.device, stream, repetitions_,
                                                   [&] { copy(pageable, stream, true); });
      const timing pinned_sync = time_on_stream(b.device, cudaStreamLegacy, repetitions_,
                                                [&] { copy(pinned, cudaStreamLegacy, false); });
      const timing pinned_async = time_on_stream(b.device, stream, repetitions_,
                                                 [&] { copy(pinned, stream, true); });
      host_copy_measurement h;
      h.device = b.device;
      h.direction = direction;
      h.pageable_sync_gbps = gigabytes_per_second(bytes_, pageable_sync.gpu_ms);
      h.pageable_async_gbps = gigabytes_per_second(bytes_, pageable_async.gpu_ms);
      h.pageable_async_host_blocked = pageable_async.host_blocked;
      h.pinned_sync_gbps = gigabytes_per_second(bytes_, pinned_sync.gpu_ms);
      h.pinned_async_gbps = gigabytes_per_second(bytes_, pinned_async.gpu_ms);
      h.pinned_async_host_blocked = pinned_async.host_blocked;
      out.push_back(h);
    }
  }
  return out;
}

std::vector<peer_copy_measurement> measurement_bench::peer_copies(const std::vector<slot_pair>& pairs) {
  std::vector<peer_copy_measurement> out;
  if (pairs.empty()) return out;
  // The host-staged route is measured on a group that refuses peer access, over the same
  // slots, so that it is exactly the path multigpu takes without a link.
  if (group_.options().peers != peer_policy::host_staged && !staged_group_)
    staged_group_.emplace(group_.devices(), group_options{peer_policy::host_staged});
  const device_group& staged = staged_group_ ? *staged_group_ : group_;
  for (const slot_pair& p : pairs) {
    const int from = group_.device(p.from_slot);
    const int to = group_.device(p.to_slot);
    const void* source = buffers_of(from).source->data();
    void* destination = buffers_of(to).destination->data();
    const cudaStream_t stream = group_.stream(p.to_slot);
    // The destination pulls, as multigpu's peer route does.
    const timing direct = time_on_stream(to, stream, repetitions_, [&] {
      if (from == to)
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(destination, source, bytes_, cudaMemcpyDeviceToDevice, stream));
      else
        MULTIGPU_CUDA_TRY(cudaMemcpyPeerAsync(destination, to, source, from, bytes_, stream));
    });
    peer_copy_measurement m;
    m.from = from;
    m.to = to;
    m.same_device = from == to;
    m.direct_gbps = gigabytes_per_second(bytes_, direct.gpu_ms);
    m.host_staged_gbps = gigabytes_per_second(
        bytes_, time_staged(staged, p.from_slot, p.to_slot, source, destination, bytes_, repetitions_));
    out.push_back(m);
  }
  return out;
}

std::vector<overlap_measurement> measurement_bench::overlaps() {
  std::vector<overlap_measurement> out;
  for (const device_buffers& b : devices_) {
    device_guard guard(b.device);
    stream copies(b.device);
    stream kernels(b.device);
    const event fork(b.device), join(b.device);
    const cudaStream_t cs = copies.get();
    const cudaStream_t ks = kernels.get();
    void* target = b.destination->data();
    const void* origin = pinned_.data();
    auto copy = [&](cudaStream_t on) {
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(target, origin, bytes_, cudaMemcpyHostToDevice, on));
    };

    // Size the kernel like the copy: clock64 counts SM cycles, whose rate is measured
    // rather than read (clocks boost and throttle).
    const timing calibration = time_on_stream(b.device, ks, repetitions_,
                                              [&] { launch_spin(calibration_cycles, ks); });
    const timing copy_alone = time_on_stream(b.device, cs, repetitions_, [&] { copy(cs); });
    long long cycles = 0;
    if (calibration.gpu_ms > 0)
      cycles = std::llround(copy_alone.gpu_ms * (static_cast<double>(calibration_cycles) / calibration.gpu_ms));
    const timing kernel_alone = time_on_stream(b.device, ks, repetitions_, [&] { launch_spin(cycles, ks); });
    const timing serial = time_on_stream(b.device, cs, repetitions_, [&] {
      copy(cs);
      launch_spin(cycles, cs);
    });
    // Fork the kernel's stream off the copy's after the start event, join it back before
    // the stop event: the span covers both.
    const timing overlapped = time_on_stream(b.device, cs, repetitions_, [&] {
      fork.record(cs);
      fork.order_before(ks);
      launch_spin(cycles, ks);
      copy(cs);
      join.record(ks);
      join.order_before(cs);
    });
    out.push_back({b.device, copy_alone.gpu_ms, kernel_alone.gpu_ms, serial.gpu_ms, overlapped.gpu_ms});
  }
  return out;
}

}  // namespace multigpu::doctor
