#include <multigpu/runtime/detail/scratch.hpp>

#include <multigpu/core/capture.hpp>
#include <multigpu/core/device_guard.hpp>

#include <algorithm>
#include <stdexcept>

namespace multigpu::detail {

slot_scratch::slot_scratch(int device, cudaStream_t stream, device_pool& pool,
                           std::atomic<std::uint64_t>& generation)
    : generation_(&generation), device_(device), stream_(stream), pool_(&pool) {
  MULTIGPU_CUDA_TRY(cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, device));
}

slot_scratch::~slot_scratch() {
  // Released in stream order: work still queued on the stream finishes before reuse.
  for (region* r : {&temporary_, &auxiliary_, &partials_}) pool_->deallocate(r->data, stream_);
}

void* slot_scratch::grow(region& r, std::size_t bytes) {
  if (bytes <= r.capacity) return r.data;
  refuse_during_capture(false);
  // Geometric growth, in 4 KiB steps, so that a sequence of growing sizes reallocates
  // O(log n) times.
  std::size_t capacity = std::max(bytes, 2 * r.capacity);
  capacity = (capacity + 4095) / 4096 * 4096;
  device_guard guard(device_);
  void* fresh = pool_->allocate(capacity, stream_);
  pool_->deallocate(r.data, stream_);  // after every earlier use on this stream
  r.data = fresh;
  r.capacity = capacity;
  ++*generation_;
  return fresh;
}

void* slot_scratch::mapped_partials(std::size_t bytes) {
  if (!mapped_.empty() && mapped_.back().size() >= bytes) return mapped_.back().data();
  refuse_during_capture(false);
  std::size_t capacity = std::max<std::size_t>({bytes, 4096, mapped_.empty() ? 0 : 2 * mapped_.back().size()});
  mapped_.emplace_back(capacity, pinned_buffer::mapping::mapped);
  ++*generation_;
  return mapped_.back().data();
}

std::size_t slot_scratch::host_bytes() const noexcept {
  std::size_t total = 0;
  for (const auto& b : mapped_) total += b.size();
  return total;
}

group_scratch::group_scratch(const std::vector<int>& slot_devices, const std::vector<cudaStream_t>& streams,
                               const std::vector<device_pool*>& scratch_pools) {
  slots_.reserve(slot_devices.size());
  for (std::size_t s = 0; s < slot_devices.size(); ++s)
    slots_.push_back(std::make_unique<slot_scratch>(slot_devices[s], streams[s], *scratch_pools[s], generation_));
}

scratch_lock::scratch_lock(group_scratch& state) : state_(&state) {
  if (state.owner_.load() == std::this_thread::get_id())
    throw std::logic_error(
        "multigpu: a collective algorithm (reduce, scan, count, min/max_element, ...) was called on a group "
        "from inside another collective call on the same group (a reduce_segments callback?); the "
        "callback may only enqueue work on its segment's stream");
  state.mutex_.lock();
  state.owner_.store(std::this_thread::get_id());
}

scratch_lock::~scratch_lock() {
  state_->owner_.store(std::thread::id{});
  state_->mutex_.unlock();
}

std::size_t group_scratch::device_bytes() const noexcept {
  std::size_t total = 0;
  for (const auto& s : slots_) total += s->device_bytes();
  return total;
}

std::size_t group_scratch::host_bytes() const noexcept {
  std::size_t total = 0;
  for (const auto& s : slots_) total += s->host_bytes();
  return total;
}

}  // namespace multigpu::detail
