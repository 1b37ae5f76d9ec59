#include <multigpu/comm/communicator.hpp>

#include <multigpu/core/error.hpp>

#include <cstdlib>
#include <cstring>

namespace multigpu {

std::size_t size_of(data_type type) noexcept {
  switch (type) {
    case data_type::int8:
    case data_type::uint8: return 1;
    case data_type::int32:
    case data_type::uint32:
    case data_type::float32: return 4;
    case data_type::int64:
    case data_type::uint64:
    case data_type::float64: return 8;
  }
  return 0;
}

const char* name_of(data_type type) noexcept {
  switch (type) {
    case data_type::int8: return "int8";
    case data_type::uint8: return "uint8";
    case data_type::int32: return "int32";
    case data_type::uint32: return "uint32";
    case data_type::int64: return "int64";
    case data_type::uint64: return "uint64";
    case data_type::float32: return "float32";
    case data_type::float64: return "float64";
  }
  return "?";
}

const char* name_of(reduce_op op) noexcept {
  switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::prod: return "prod";
    case reduce_op::min: return "min";
    case reduce_op::max: return "max";
  }
  return "?";
}

void communicator::check_peer(const char* call, int peer) const {
  MULTIGPU_EXPECTS_AS(peer >= 0 && peer < size(), std::out_of_range,
                      detail::concat("communicator::", call, ": peer ", peer, " is not a rank of this ",
                                     engine(), " communicator of size ", size()));
}

void communicator::set_timeout(std::chrono::duration<double> t) {
  if (!(t.count() > 0))
    throw std::invalid_argument(detail::concat("communicator::set_timeout: the timeout must be positive (or ",
                                               "communicator::forever), not ", t.count(), " s"));
  timeout_ = t;
}

std::chrono::steady_clock::time_point communicator::deadline() const noexcept {
  using clock = std::chrono::steady_clock;
  const auto now = clock::now();
  const double left = std::chrono::duration<double>(clock::time_point::max() - now).count();
  if (!(timeout_.count() < left - 1.0)) return clock::time_point::max();  // a second's margin for rounding
  return now + std::chrono::duration_cast<clock::duration>(timeout_);
}

std::chrono::duration<double> communicator::default_timeout() {
  if (const char* s = std::getenv("MULTIGPU_COMM_TIMEOUT_S")) {
    char* end = nullptr;
    double seconds = std::strtod(s, &end);
    if (end != s && seconds > 0) return std::chrono::duration<double>(seconds);
  }
  return std::chrono::duration<double>(300.0);
}

namespace detail {

bool is_device_pointer(const void* p) noexcept {
  if (p == nullptr) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();  // no GPU, or an unknown pointer: host memory
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (is_device_pointer(dst) || is_device_pointer(src)) {
    MULTIGPU_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  } else {
    std::memmove(dst, src, bytes);
  }
}

void expect_per_rank(const char* call, std::size_t entries, int size) {
  MULTIGPU_EXPECTS(entries == static_cast<std::size_t>(size),
                   concat(call, ": ", entries, " per-rank entries for a communicator of size ", size,
                          " (the arrays come from a communicator of another size?)"));
}

}  // namespace detail
}  // namespace multigpu
