#include <multigpu/comm/in_process_communicator.hpp>

#include <multigpu/core/error.hpp>

#include <cstring>

namespace multigpu {
void in_process_communicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes, cudaStream_t stream) {
  wait_for_stream(stream);
  copy_local(recv, send, bytes, stream);
}

void in_process_communicator::all_reduce(const void* send, void* recv, std::size_t count, data_type type, reduce_op,
                                         cudaStream_t stream) {
  wait_for_stream(stream);
  copy_local(recv, send, count * size_of(type), stream);
}

void in_process_communicator::send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv,
                                              std::size_t recv_bytes, int recv_from, cudaStream_t stream) {
  if (send_to != -1) check_peer("send_recv", send_to);
  if (recv_from != -1) check_peer("send_recv", recv_from);
  wait_for_stream(stream);
  if (send_to == 0) {
    std::vector<std::byte> message(send_bytes);
    copy_local(message.data(), send, send_bytes, stream);
    mailbox_.push_back(std::move(message));
  }
  if (recv_from == 0) {
    if (mailbox_.empty())
      throw comm_error("multigpu: in-process communicator: recv from rank 0 with no matching send: it would "
                       "wait forever");
    std::vector<std::byte> message = std::move(mailbox_.front());
    mailbox_.pop_front();
    if (message.size() != recv_bytes)
      throw comm_error(detail::concat("multigpu: in-process communicator: recv of ", recv_bytes,
                                      " bytes matched a send of ", message.size(), " bytes"));
    copy_local(recv, message.data(), recv_bytes, stream);
  }
}

void in_process_communicator::all_to_all_v_bytes(const void* send, std::span<const std::size_t> send_counts,
                                                 std::span<const std::size_t> send_displs, void* recv,
                                                 std::span<const std::size_t> recv_counts,
                                                 std::span<const std::size_t> recv_displs, cudaStream_t stream) {
  detail::expect_per_rank("all_to_all_v", send_counts.size(), 1);
  detail::expect_per_rank("all_to_all_v", send_displs.size(), 1);
  detail::expect_per_rank("all_to_all_v", recv_counts.size(), 1);
  detail::expect_per_rank("all_to_all_v", recv_displs.size(), 1);
  if (send_counts[0] != recv_counts[0])
    throw comm_error(detail::concat("multigpu: in-process all_to_all_v: rank 0 sends ", send_counts[0],
                                    " bytes to itself but expects ", recv_counts[0]));
  wait_for_stream(stream);
  copy_local(static_cast<std::byte*>(recv) + recv_displs[0], static_cast<const std::byte*>(send) + send_displs[0],
             send_counts[0], stream);
}

void in_process_communicator::broadcast_bytes(void*, std::size_t, int root, cudaStream_t stream) {
  check_peer("broadcast", root);
  wait_for_stream(stream);  // the data is already where it goes
}

}  // namespace multigpu
