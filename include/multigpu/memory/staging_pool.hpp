#pragma once
// Reusable blocks of pinned, mapped host memory with stream-ordered reuse. Device-to-device
// copies without a peer link are staged through such blocks (device to host on the source's
// stream, host to device on the destination's, double buffered), and partial results of
// reductions and scans meet in them (zero-copy). Neither needs the host to wait: each block
// remembers events ("fences") recorded after its last use, and the next user's stream waits
// on them before touching the block.

#include <multigpu/core/event_pool.hpp>
#include <multigpu/memory/pinned_buffer.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace multigpu {

class staging_pool {
  struct fence_entry {
    cudaStream_t stream;
    event_pool::handle event;
  };
  struct block {
    pinned_buffer memory;
    std::vector<fence_entry> fences;  // the last lease's use ends before these
    std::mutex mutex;                 // slots may fence one lease from several threads
  };

 public:
  /// Exclusive use of one block until destroyed. Every stream that touches the block calls
  /// order_before() first and fence() after its last enqueued use.
  class lease {
   public:
    lease() = default;
    lease(lease&& other) noexcept;
    lease& operator=(lease&& other) noexcept;
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease();

    void* data() const noexcept { return block_->memory.data(); }
    std::size_t size() const noexcept { return block_->memory.size(); }
    template <class T>
    T* as() const noexcept {
      return static_cast<T*>(data());
    }
    explicit operator bool() const noexcept { return block_ != nullptr; }

    /// `stream` waits until every earlier use of the block, by earlier leases and by
    /// other streams of this one, is done.
    void order_before(cudaStream_t stream) const;
    /// The host waits until every earlier use of the block is done.
    void order_before_host();
    /// Marks the work enqueued on `stream` (of `device`) so far as a use of the block. A
    /// later fence on the same stream replaces an earlier one, since it covers it.
    void fence(int device, cudaStream_t stream);

   private:
    friend class staging_pool;
    lease(staging_pool* pool, std::unique_ptr<block> b) : pool_(pool), block_(std::move(b)) {}
    void reset() noexcept;
    staging_pool* pool_ = nullptr;
    std::unique_ptr<block> block_;
    std::vector<fence_entry> new_fences_;
  };

  explicit staging_pool(event_pool& events) : events_(&events) {}
  staging_pool(const staging_pool&) = delete;
  staging_pool& operator=(const staging_pool&) = delete;

  /// A block of at least `bytes` (rounded up to a power of two, at least 4 KiB).
  lease acquire(std::size_t bytes);
  /// Pinned bytes held, in use or free.
  std::size_t held_bytes() const;
  /// Frees the blocks not in use (at teardown, once every stream is idle).
  void release_free() noexcept;

 private:
  void give_back(std::unique_ptr<block> b) noexcept;
  event_pool* events_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, std::unique_ptr<block>> free_;
  std::size_t held_ = 0;
};

}  // namespace multigpu
