#pragma once
// Recycled CUDA events, per device. Cross-device ordering records an event on the
// producer's stream and waits on it from the consumer's; creating an event for each such
// edge would cost a driver call each time, so events are taken from and returned to a pool.
//
// Returning an event right after cudaStreamWaitEvent is safe: a wait captures the work
// recorded at the time of the call, not any later re-recording of the same event.

#include <multigpu/core/error.hpp>
#include <multigpu/core/observer.hpp>
#include <multigpu/core/unique_handle.hpp>

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
    cudaEvent_t get() const noexcept { return event_.get(); }
    int device() const noexcept { return event_.deleter().device; }
    explicit operator bool() const noexcept { return static_cast<bool>(event_); }
    /// Records on `stream`, which must belong to this event's device.
    void record(cudaStream_t stream) const {
      MULTIGPU_CUDA_TRY(cudaEventRecord(get(), stream));
      detail::observe_record(get(), stream);
    }
    /// Makes `stream` (any device) wait for the recorded work.
    void order_before(cudaStream_t stream) const {
      MULTIGPU_CUDA_TRY(cudaStreamWaitEvent(stream, get(), 0));
      detail::observe_wait(stream, get());
    }
    void synchronize() const { MULTIGPU_CUDA_TRY(cudaEventSynchronize(get())); }
    bool ready() const;
    /// Returns the event to its pool now.
    void reset() noexcept { event_.reset(); }

   private:
    friend class event_pool;
    struct give_back_to {
      event_pool* pool = nullptr;
      int device = 0;
      void operator()(cudaEvent_t e) const noexcept { pool->give_back(device, e); }
    };
    handle(event_pool* pool, int device, cudaEvent_t event) : event_(event, give_back_to{pool, device}) {}
    unique_handle<cudaEvent_t, give_back_to> event_;
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
