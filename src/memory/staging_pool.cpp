#include <multigpu/memory/staging_pool.hpp>
#include <multigpu/core/capture.hpp>
#include <multigpu/core/observer.hpp>

#include <bit>

namespace multigpu {

staging_pool::lease::lease(lease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      block_(std::move(other.block_)),
      new_fences_(std::move(other.new_fences_)) {}

staging_pool::lease& staging_pool::lease::operator=(lease&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::exchange(other.pool_, nullptr);
    block_ = std::move(other.block_);
    new_fences_ = std::move(other.new_fences_);
  }
  return *this;
}

staging_pool::lease::~lease() { reset(); }

void staging_pool::lease::order_before(cudaStream_t stream) const {
  std::lock_guard lock(block_->mutex);
  for (const auto& f : block_->fences)
    if (f.stream != stream) f.event.order_before(stream);
  for (const auto& f : new_fences_)
    if (f.stream != stream) f.event.order_before(stream);
}

void staging_pool::lease::order_before_host() {
  std::lock_guard lock(block_->mutex);
  for (const auto& f : block_->fences) f.event.synchronize();
  block_->fences.clear();
  for (const auto& f : new_fences_) f.event.synchronize();
  new_fences_.clear();
}

void staging_pool::lease::fence(int device, cudaStream_t stream) {
  event_pool::handle recorded = pool_->events_->record(device, stream);
  std::lock_guard lock(block_->mutex);
  for (auto& f : new_fences_) {
    if (f.stream == stream) {
      f.event = std::move(recorded);
      return;
    }
  }
  new_fences_.push_back({stream, std::move(recorded)});
}

void staging_pool::lease::reset() noexcept {
  if (!block_) return;
  // Every user of this lease waited for the old fences before its own work, so the new
  // fences cover the old ones. A lease that was never used keeps the old fences.
  if (!new_fences_.empty()) block_->fences = std::move(new_fences_);
  new_fences_.clear();
  pool_->give_back(std::move(block_));
  pool_ = nullptr;
}

staging_pool::lease staging_pool::acquire(std::size_t bytes) {
  detail::refuse_during_capture(true);
  std::size_t size = std::bit_ceil(std::max<std::size_t>(bytes, 4096));
  if (detail::fault_due(fault_site::staging_acquisition))
    throw out_of_memory(-1, size, 0,
                        detail::concat("multigpu: injected fault: acquiring ", size,
                                       " bytes of pinned staging memory failed on purpose"));
  {
    std::lock_guard lock(mutex_);
    auto it = free_.lower_bound(size);
    // Take a free block of this size class, or one at most 4x larger.
    if (it != free_.end() && it->first <= size * 4) {
      auto b = std::move(it->second);
      free_.erase(it);
      return lease(this, std::move(b));
    }
  }
  auto b = std::make_unique<block>();
  b->memory = pinned_buffer(size, pinned_buffer::mapping::mapped);
  {
    std::lock_guard lock(mutex_);
    held_ += size;
  }
  return lease(this, std::move(b));
}

void staging_pool::release_free() noexcept {
  std::lock_guard lock(mutex_);
  for (auto& [size, b] : free_) {
    for (auto& f : b->fences) {
      try {
        f.event.synchronize();
      } catch (...) {
      }
    }
    held_ -= size;
  }
  free_.clear();
}

std::size_t staging_pool::held_bytes() const {
  std::lock_guard lock(mutex_);
  return held_;
}

void staging_pool::give_back(std::unique_ptr<block> b) noexcept {
  try {
    std::lock_guard lock(mutex_);
    std::size_t size = b->memory.size();
    free_.emplace(size, std::move(b));
  } catch (...) {
    // Could not record the block as free: drop it; its memory is released with it.
  }
}

}  // namespace multigpu
