#pragma once
// Recycled CUDA events, per device. Cross-device ordering records an event on the
// producer's stream and waits on it from the consumer's; creating an event for each such
// edge would cost a driver call each time, so events are taken from and returned to a pool.
//
// Returning an event right after cudaStreamWaitEvent is safe: a wait captures the work
// recorded at the time of the call, not any later re-recording of the same event.

#include <multigpu/core/error.hpp>
#include <multigpu/core/schedule.hpp>

#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace multigpu {

class event_pool {
 public:
  /// A pooled event, returned to its pool when destroyed. Move-only.
  class handle {
   public:
    handle() = default;
    handle(handle&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)),
          device_(other.device_),
          event_(std::exchange(other.event_, nullptr)) {}
    handle& operator=(handle&& other) noexcept {
      if (this != &other) {
        reset();
        pool_ = std::exchange(other.pool_, nullptr);
        device_ = other.device_;
        event_ = std::exchange(other.event_, nullptr);
      }
      return *this;
    }
    handle(const handle&) = delete;
    handle& operator=(const handle&) = delete;
    ~handle() { reset(); }

    cudaEvent_t get() const noexcept { return event_; }
    int device() const noexcept { return device_; }
    explicit operator bool() const noexcept { return event_ != nullptr; }
    /// Records on `stream`, which must belong to this event's device.
    void record(cudaStream_t stream) const {
      MULTIGPU_CUDA_TRY(cudaEventRecord(event_, stream));
      detail::schedule_note_record(event_, stream);
    }
    /// Makes `stream` (any device) wait for the recorded work.
    void order_before(cudaStream_t stream) const {
      MULTIGPU_CUDA_TRY(cudaStreamWaitEvent(stream, event_, 0));
      detail::schedule_note_wait(stream, event_);
    }
    void synchronize() const { MULTIGPU_CUDA_TRY(cudaEventSynchronize(event_)); }
    bool ready() const;
    void reset() noexcept;

   private:
    friend class event_pool;
    handle(event_pool* pool, int device, cudaEvent_t event)
        : pool_(pool), device_(device), event_(event) {}
    event_pool* pool_ = nullptr;
    int device_ = 0;
    cudaEvent_t event_ = nullptr;
  };

  event_pool() = default;
  ~event_pool();
  event_pool(const event_pool&) = delete;
  event_pool& operator=(const event_pool&) = delete;

  handle acquire(int device);
  /// An event recorded on `stream` of `device` now.
  handle record(int device, cudaStream_t stream) {
    handle h = acquire(device);
    h.record(stream);
    return h;
  }
  /// `consumer` waits for everything enqueued on `producer` (of `producer_device`) so far.
  void order(int producer_device, cudaStream_t producer, cudaStream_t consumer) {
    if (producer == consumer) return;
    record(producer_device, producer).order_before(consumer);
  }

 private:
  void give_back(int device, cudaEvent_t event) noexcept;
  std::mutex mutex_;
  std::unordered_map<int, std::vector<cudaEvent_t>> free_;
};

}  // namespace multigpu
