#pragma once
// One persistent host thread per slot, for groups that dispatch each slot's enqueues from
// its own thread (dispatch_policy::worker_threads) instead of from the caller's thread: the
// source material's "one process, many GPUs, many threads". Each worker sets its slot's
// device once; a batch hands every worker its step and waits for all of them.

#include <multigpu/core/piece.hpp>
#include <multigpu/core/function_ref.hpp>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace multigpu::detail {

class slot_workers {
 public:
  explicit slot_workers(std::vector<int> slot_devices);
  ~slot_workers();
  slot_workers(const slot_workers&) = delete;
  slot_workers& operator=(const slot_workers&) = delete;

  /// Runs step(i) on the worker of pieces[i].slot for every i, concurrently across workers,
  /// and returns when all are done; the first exception thrown by a step is rethrown here.
  void run(std::span<const piece> pieces, function_ref<void(std::size_t)> step);

 private:
  struct batch;
  struct worker;
  void loop(worker& w, int device);
  std::vector<std::unique_ptr<worker>> workers_;
  std::vector<std::thread> threads_;
};

}  // namespace multigpu::detail
