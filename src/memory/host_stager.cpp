#include <multigpu/memory/detail/host_stager.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/memory/pinned_buffer.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

namespace multigpu::detail {

struct host_stager::job {
  bool to_device;
  std::byte* host;
  std::vector<device_piece> pieces;
  std::vector<std::size_t> host_offsets;  // where each piece starts in host memory
  std::vector<chunk> chunks;
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::condition_variable finished;
  std::size_t done = 0;
  std::exception_ptr error;

  void complete(std::size_t count, std::exception_ptr e = nullptr) {
    std::lock_guard lock(mutex);
    if (e && !error) error = e;
    done += count;
    if (done == chunks.size()) finished.notify_all();
  }
  bool failed() {
    std::lock_guard lock(mutex);
    return error != nullptr;
  }
};

// A worker's pinned buffer and the event that marks the end of its last DMA. Events belong
// to a device, so the event is re-created when the buffer moves to another device.
struct staging_slot {
  pinned_buffer memory;
  cudaEvent_t event = nullptr;
  int event_device = -1;
  bool pending = false;

  void wait() {
    if (pending) MULTIGPU_CUDA_TRY(cudaEventSynchronize(event));
    pending = false;
  }
  void record(int device, cudaStream_t stream) {
    if (event_device != device) {
      wait();
      if (event) MULTIGPU_CUDA_TRY(cudaEventDestroy(event));
      event = nullptr;
      device_guard guard(device);
      MULTIGPU_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      event_device = device;
    }
    MULTIGPU_CUDA_TRY(cudaEventRecord(event, stream));
    pending = true;
  }
  ~staging_slot() {
    if (!event) return;
    if (pending) MULTIGPU_CUDA_REPORT(cudaEventSynchronize(event));
    MULTIGPU_CUDA_REPORT(cudaEventDestroy(event));
  }
};

struct host_stager::worker {
  std::vector<std::unique_ptr<staging_slot>> slots;
  std::size_t next_slot = 0;
  staging_slot& next() { return *slots[next_slot++ % slots.size()]; }
};

std::shared_ptr<host_stager> host_stager::shared() {
  static std::mutex mutex;
  static std::weak_ptr<host_stager> instance;
  std::lock_guard lock(mutex);
  if (auto existing = instance.lock()) return existing;
  unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  unsigned workers = std::clamp(hardware / 2, 1u, 8u);
  if (const char* env = std::getenv("MULTIGPU_STAGING_THREADS")) {
    int requested = std::atoi(env);
    if (requested > 0) workers = static_cast<unsigned>(std::min(requested, 64));
  }
  auto created = std::make_shared<host_stager>(workers, host_chunk_bytes, 3);
  instance = created;
  return created;
}

host_stager::host_stager(unsigned workers, std::size_t chunk_bytes, unsigned buffers_per_worker)
    : chunk_bytes_(chunk_bytes), buffers_per_worker_(std::max(2u, buffers_per_worker)) {
  workers_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i) workers_.push_back(std::make_unique<worker>());
  try {
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this, i] { run(*workers_[i]); });
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    throw;
  }
}

host_stager::~host_stager() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void host_stager::run(worker& self) {
  for (;;) {
    std::shared_ptr<job> j;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      j = queue_.front();
    }
    auto claim = [&]() -> std::size_t {
      std::size_t index = j->next.fetch_add(1);
      if (index >= j->chunks.size()) {
        std::lock_guard lock(mutex_);
        if (!queue_.empty() && queue_.front() == j) queue_.pop_front();
        return SIZE_MAX;
      }
      return index;
    };
    try {
      while (self.slots.size() < buffers_per_worker_) {
        auto slot = std::make_unique<staging_slot>();
        slot->memory = pinned_buffer(chunk_bytes_, pinned_buffer::mapping::none);
        self.slots.push_back(std::move(slot));
      }
    } catch (...) {
      self.slots.clear();
      for (std::size_t c; (c = claim()) != SIZE_MAX;) j->complete(1, std::current_exception());
      continue;
    }

    auto host_of = [&](const chunk& c) {
      return j->host + j->host_offsets[c.piece] + c.offset;
    };
    auto device_of = [&](const chunk& c) {
      return static_cast<std::byte*>(j->pieces[c.piece].data) + c.offset;
    };

    if (j->to_device) {
      for (std::size_t index; (index = claim()) != SIZE_MAX;) {
        const chunk& c = j->chunks[index];
        try {
          if (!j->failed()) {
            const device_piece& p = j->pieces[c.piece];
            staging_slot& slot = self.next();
            slot.wait();  // its previous DMA has read it
            std::memcpy(slot.memory.data(), host_of(c), c.bytes);
            device_guard guard(p.device);
            MULTIGPU_CUDA_TRY(cudaMemcpyAsync(device_of(c), slot.memory.data(), c.bytes,
                                              cudaMemcpyHostToDevice, p.stream));
            slot.record(p.device, p.stream);
          }
          j->complete(1);
        } catch (...) {
          j->complete(1, std::current_exception());
        }
      }
    } else {
      // Keep up to (buffers - 1) DMAs in flight while copying the oldest one out.
      struct in_flight {
        std::size_t index;
        staging_slot* slot;
      };
      std::deque<in_flight> pending;
      auto finish_oldest = [&] {
        in_flight f = pending.front();
        pending.pop_front();
        try {
          f.slot->wait();
          if (!j->failed()) std::memcpy(host_of(j->chunks[f.index]), f.slot->memory.data(), j->chunks[f.index].bytes);
          j->complete(1);
        } catch (...) {
          j->complete(1, std::current_exception());
        }
      };
      for (std::size_t index; (index = claim()) != SIZE_MAX;) {
        const chunk& c = j->chunks[index];
        if (pending.size() + 1 >= self.slots.size()) finish_oldest();
        try {
          if (j->failed()) {
            j->complete(1);
            continue;
          }
          const device_piece& p = j->pieces[c.piece];
          staging_slot& slot = self.next();
          slot.wait();
          device_guard guard(p.device);
          MULTIGPU_CUDA_TRY(cudaMemcpyAsync(slot.memory.data(), device_of(c), c.bytes,
                                            cudaMemcpyDeviceToHost, p.stream));
          slot.record(p.device, p.stream);
          pending.push_back({index, &slot});
        } catch (...) {
          j->complete(1, std::current_exception());
        }
      }
      while (!pending.empty()) finish_oldest();
    }
  }
}

void host_stager::scatter(const void* host, std::span<const device_piece> pieces) {
  stream_job(true, const_cast<std::byte*>(static_cast<const std::byte*>(host)), pieces);
}

void host_stager::gather(void* host, std::span<const device_piece> pieces) {
  stream_job(false, static_cast<std::byte*>(host), pieces);
}

void host_stager::stream_job(bool to_device, std::byte* host, std::span<const device_piece> pieces) {
  auto j = std::make_shared<job>();
  j->to_device = to_device;
  j->host = host;
  j->pieces.assign(pieces.begin(), pieces.end());
  std::vector<std::size_t> sizes;
  std::size_t offset = 0;
  for (const auto& p : pieces) {
    j->host_offsets.push_back(offset);
    sizes.push_back(p.bytes);
    offset += p.bytes;
  }
  j->chunks = interleave_chunks(sizes, chunk_bytes_);
  if (j->chunks.empty()) return;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(j);
  }
  wake_.notify_all();
  std::unique_lock lock(j->mutex);
  j->finished.wait(lock, [&] { return j->done == j->chunks.size(); });
  if (j->error) std::rethrow_exception(j->error);
}

}  // namespace multigpu::detail
