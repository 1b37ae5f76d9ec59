#include <multigpu/runtime/detail/slot_workers.hpp>

#include <multigpu/core/error.hpp>
#include <multigpu/core/observer.hpp>

#include <cuda_runtime_api.h>

namespace multigpu::detail {

struct slot_workers::batch {
  explicit batch(function_ref<void(std::size_t)> f) : step(f) {}
  function_ref<void(std::size_t)> step;
  std::mutex mutex;
  std::condition_variable done;
  std::size_t remaining = 0;
  std::exception_ptr error;
};

struct slot_workers::worker {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::pair<batch*, std::size_t>> tasks;
  bool stopping = false;
};

slot_workers::slot_workers(std::vector<int> slot_devices) {
  for (std::size_t s = 0; s < slot_devices.size(); ++s) workers_.push_back(std::make_unique<worker>());
  try {
    for (std::size_t s = 0; s < slot_devices.size(); ++s)
      threads_.emplace_back([this, s, device = slot_devices[s]] { loop(*workers_[s], device); });
  } catch (...) {
    for (auto& w : workers_) {
      std::lock_guard lock(w->mutex);
      w->stopping = true;
      w->wake.notify_all();
    }
    for (auto& t : threads_) t.join();
    throw;
  }
}

slot_workers::~slot_workers() {
  for (auto& w : workers_) {
    std::lock_guard lock(w->mutex);
    w->stopping = true;
    w->wake.notify_all();
  }
  for (auto& t : threads_) t.join();
}

void slot_workers::loop(worker& w, int device) {
  // The current device is per thread: set it once, every step of this slot runs here. If
  // that fails, every step given to this worker fails with the error instead of running on
  // whatever device the thread started on.
  const cudaError_t selected = cudaSetDevice(device);
  if (selected != cudaSuccess) (void)cudaGetLastError();  // reported through each step below
  for (;;) {
    std::pair<batch*, std::size_t> task;
    {
      std::unique_lock lock(w.mutex);
      w.wake.wait(lock, [&] { return w.stopping || !w.tasks.empty(); });
      if (w.tasks.empty()) return;
      task = w.tasks.front();
      w.tasks.pop_front();
    }
    batch& b = *task.first;
    std::exception_ptr error;
    try {
      if (selected != cudaSuccess) throw cuda_error(selected, "cudaSetDevice(device) on the slot's worker thread", device, __FILE__, __LINE__);
      if (detail::fault_due(fault_site::worker_step))
        throw cuda_error(cudaErrorLaunchOutOfResources, "injected fault: a slot's worker step failed on purpose", device,
                         __FILE__, __LINE__);
      b.step(task.second);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(b.mutex);
    if (error && !b.error) b.error = error;
    if (--b.remaining == 0) b.done.notify_all();
  }
}

void slot_workers::run(std::span<const piece> pieces, function_ref<void(std::size_t)> step) {
  if (pieces.empty()) return;
  batch b(step);
  b.remaining = pieces.size();
  std::size_t queued = 0;
  try {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      worker& w = *workers_.at(pieces[i].slot);
      std::lock_guard lock(w.mutex);
      w.tasks.emplace_back(&b, i);
      ++queued;
      w.wake.notify_one();
    }
  } catch (...) {
    // Queueing failed part way (a slot out of range, no memory for the task): the steps
    // already queued hold `b`, which lives on this frame, so wait for them before unwinding.
    std::unique_lock lock(b.mutex);
    b.remaining -= pieces.size() - queued;
    b.done.wait(lock, [&] { return b.remaining == 0; });
    throw;
  }
  std::unique_lock lock(b.mutex);
  b.done.wait(lock, [&] { return b.remaining == 0; });
  if (b.error) std::rethrow_exception(b.error);
}

}  // namespace multigpu::detail
