#pragma once
// The one-rank communicator: rank 0 of size 1, no MPI. Collectives copy the rank's own data
// (host or device); a send to itself is kept until the matching receive. Code written
// against `communicator` and team_vector runs unchanged in a single process.

#include <multigpu/comm/communicator.hpp>

#include <cstddef>
#include <deque>
#include <vector>

namespace multigpu {

class in_process_communicator final : public communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* engine() const noexcept override { return "in-process"; }
  bool accepts_device_buffers(int) const noexcept override { return true; }

  using communicator::all_gather_bytes;
  void all_gather_bytes(const void* send, void* recv, std::size_t bytes, cudaStream_t stream = nullptr) override;
  using communicator::all_reduce;
  void all_reduce(const void* send, void* recv, std::size_t count, data_type type, reduce_op op,
                  cudaStream_t stream = nullptr) override;
  void send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv, std::size_t recv_bytes,
                       int recv_from, cudaStream_t stream = nullptr) override;
  using communicator::all_to_all_v_bytes;
  void all_to_all_v_bytes(const void* send, std::span<const std::size_t> send_counts,
                          std::span<const std::size_t> send_displs, void* recv,
                          std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                          cudaStream_t stream = nullptr) override;
  using communicator::broadcast_bytes;
  void broadcast_bytes(void* data, std::size_t bytes, int root, cudaStream_t stream = nullptr) override;
  void barrier() override {}

 private:
  std::deque<std::vector<std::byte>> mailbox_;  // sends to self, oldest first
};

}  // namespace multigpu
