#include <multigpu/transfer/element_copy.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/memory/staging_pool.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace multigpu::transfer {
namespace {

using stream_of_device = std::pair<int, cudaStream_t>;

/// Each stream among the places once, with its device, for the places with `managed` as given.
std::vector<stream_of_device> streams_of(std::span<const element_place> places, bool managed) {
  std::vector<stream_of_device> streams;
  for (const element_place& p : places) {
    if (p.managed != managed) continue;
    const stream_of_device s{p.device, p.stream};
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(s);
  }
  return streams;
}

void synchronize(const std::vector<stream_of_device>& streams) {
  for (const auto& [device, stream] : streams) {
    device_guard guard(device);
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
  }
}

/// A staging block for the batch's device elements, which every one of their streams follows
/// before any of them uses it (so that no stream waits for another's copies).
staging_pool::lease stage(detail::group_resources& group, const std::vector<stream_of_device>& streams,
                          std::size_t bytes) {
  staging_pool::lease block = group.staging().acquire(bytes);
  for (const auto& [device, stream] : streams) {
    device_guard guard(device);
    block.order_before(stream);
  }
  return block;
}

/// Marks each stream's copies as uses of the block, once per stream after its last copy:
/// fence() on the way out; the destructor, if an error left before it, fences what was
/// enqueued so far, so that the block is not reused under copies still in flight.
class batch_fences {
 public:
  batch_fences(staging_pool::lease& block, const std::vector<stream_of_device>& streams)
      : block_(block), streams_(streams) {}
  batch_fences(const batch_fences&) = delete;
  batch_fences& operator=(const batch_fences&) = delete;
  ~batch_fences() {
    if (done_) return;
    for (const auto& [device, stream] : streams_) {
      try {
        detail::quiet_device_guard guard(device);
        block_.fence(device, stream);
      } catch (...) {  // nothing more can be ordered; the error that brought us here is reported
      }
    }
  }
  void fence() {
    for (const auto& [device, stream] : streams_) {
      device_guard guard(device);
      block_.fence(device, stream);
    }
    done_ = true;
  }

 private:
  staging_pool::lease& block_;
  const std::vector<stream_of_device>& streams_;
  bool done_ = false;
};

}  // namespace

void read_elements(detail::group_resources& group, std::span<const element_place> places,
                   std::size_t element_bytes, void* host) {
  if (places.empty()) return;
  auto* out = static_cast<std::byte*>(host);
  const std::vector<stream_of_device> device_streams = streams_of(places, false);
  if (!device_streams.empty()) {
    staging_pool::lease block = stage(group, device_streams, places.size() * element_bytes);
    batch_fences fences(block, device_streams);
    auto* staged = block.as<std::byte>();
    for (std::size_t j = 0; j < places.size(); ++j) {
      const element_place& p = places[j];
      if (p.managed) continue;
      device_guard guard(p.device);
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(staged + j * element_bytes, p.address, element_bytes,
                                        cudaMemcpyDefault, p.stream));
    }
    fences.fence();
    block.order_before_host();
    for (std::size_t j = 0; j < places.size(); ++j)
      if (!places[j].managed) std::memcpy(out + j * element_bytes, staged + j * element_bytes, element_bytes);
  }
  const std::vector<stream_of_device> managed_streams = streams_of(places, true);
  if (managed_streams.empty()) return;
  synchronize(managed_streams);
  for (std::size_t j = 0; j < places.size(); ++j)
    if (places[j].managed) std::memcpy(out + j * element_bytes, places[j].address, element_bytes);
}

void write_elements(detail::group_resources& group, std::span<const element_place> places,
                    std::size_t element_bytes, const void* host) {
  if (places.empty()) return;
  const auto* in = static_cast<const std::byte*>(host);
  const std::vector<stream_of_device> device_streams = streams_of(places, false);
  if (!device_streams.empty()) {
    staging_pool::lease block = group.staging().acquire(places.size() * element_bytes);
    block.order_before_host();  // earlier users of the block are done with it
    auto* staged = block.as<std::byte>();
    std::memcpy(staged, in, places.size() * element_bytes);
    for (const auto& [device, stream] : device_streams) {
      device_guard guard(device);
      block.order_before(stream);
    }
    batch_fences fences(block, device_streams);
    for (std::size_t j = 0; j < places.size(); ++j) {
      const element_place& p = places[j];
      if (p.managed) continue;
      device_guard guard(p.device);
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(p.address, staged + j * element_bytes, element_bytes,
                                        cudaMemcpyDefault, p.stream));
    }
    fences.fence();
  }
  const std::vector<stream_of_device> managed_streams = streams_of(places, true);
  if (managed_streams.empty()) return;
  // The host writes managed memory itself, then sends the pages back to the devices ahead of
  // the next device work on their streams.
  synchronize(managed_streams);
  for (std::size_t j = 0; j < places.size(); ++j) {
    const element_place& p = places[j];
    if (!p.managed) continue;
    std::memcpy(p.address, in + j * element_bytes, element_bytes);
    device_guard guard(p.device);
    cudaMemLocation location{};
    location.type = cudaMemLocationTypeDevice;
    location.id = p.device;
    MULTIGPU_CUDA_TRY(cudaMemPrefetchAsync(p.address, element_bytes, location, 0, p.stream));
  }
}

}  // namespace multigpu::transfer
