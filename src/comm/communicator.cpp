#include <multigpu/comm/communicator.hpp>

#include <multigpu/core/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

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

// ---- Fallback collectives over send_recv_bytes --------------------------------------------

namespace {

/// The type a fold computes in: integers wrap around as the engines' do, so they are computed
/// unsigned (signed overflow is undefined).
template <class T, bool = std::is_integral_v<T>>
struct wrapping {
  using type = T;
};
template <class T>
struct wrapping<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <class T>
void fold_into(T* acc, const T* in, std::size_t count, reduce_op op) {
  using arithmetic = typename wrapping<T>::type;
  for (std::size_t i = 0; i < count; ++i) {
    const auto a = static_cast<arithmetic>(acc[i]), b = static_cast<arithmetic>(in[i]);
    switch (op) {
      case reduce_op::sum: acc[i] = static_cast<T>(static_cast<arithmetic>(a + b)); break;
      case reduce_op::prod: acc[i] = static_cast<T>(static_cast<arithmetic>(a * b)); break;
      case reduce_op::min: acc[i] = std::min(acc[i], in[i]); break;
      case reduce_op::max: acc[i] = std::max(acc[i], in[i]); break;
    }
  }
}

/// acc[i] = acc[i] op in[i] for `count` elements of `type`, on the host.
void fold_bytes(void* acc, const void* in, std::size_t count, data_type type, reduce_op op) {
  auto as = [&](auto* typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    fold_into(static_cast<T*>(acc), static_cast<const T*>(in), count, op);
  };
  switch (type) {
    case data_type::int8: as(static_cast<std::int8_t*>(nullptr)); break;
    case data_type::uint8: as(static_cast<std::uint8_t*>(nullptr)); break;
    case data_type::int32: as(static_cast<std::int32_t*>(nullptr)); break;
    case data_type::uint32: as(static_cast<std::uint32_t*>(nullptr)); break;
    case data_type::int64: as(static_cast<std::int64_t*>(nullptr)); break;
    case data_type::uint64: as(static_cast<std::uint64_t*>(nullptr)); break;
    case data_type::float32: as(static_cast<float*>(nullptr)); break;
    case data_type::float64: as(static_cast<double*>(nullptr)); break;
  }
}

/// Element offsets of n nearly equal chunks of `count` elements: chunk c is [at(c), at(c + 1)).
struct chunks {
  std::size_t count;
  std::size_t n;
  std::size_t at(std::size_t c) const { return (count / n) * c + std::min(c, count % n); }
  std::size_t size(std::size_t c) const { return at(c + 1) - at(c); }
};

}  // namespace

void communicator::wait_for_stream(cudaStream_t stream) const {
  if (stream != nullptr) MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
}

void communicator::copy_local(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) const {
  if (bytes == 0 || dst == src) return;
  if (host_buffers()) std::memmove(dst, src, bytes);
  else detail::copy_bytes(dst, src, bytes, stream);
}

void communicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes, cudaStream_t stream) {
  const auto n = static_cast<std::size_t>(size());
  const auto me = static_cast<std::size_t>(rank());
  wait_for_stream(stream);
  auto* out = static_cast<std::byte*>(recv);
  copy_local(out + me * bytes, send, bytes, stream);
  const int right = static_cast<int>((me + 1) % n), left = static_cast<int>((me + n - 1) % n);
  // Step s passes on the block received at step s - 1 (at step 0, the rank's own).
  for (std::size_t s = 0; s + 1 < n; ++s) {
    const std::size_t give = (me + n - s) % n, take = (me + 2 * n - s - 1) % n;
    send_recv_bytes(out + give * bytes, bytes, right, out + take * bytes, bytes, left, stream);
  }
}

void communicator::all_reduce(const void* send, void* recv, std::size_t count, data_type type, reduce_op op,
                              cudaStream_t stream) {
  const std::size_t width = size_of(type);
  const auto n = static_cast<std::size_t>(size());
  const auto me = static_cast<std::size_t>(rank());
  wait_for_stream(stream);
  std::vector<std::byte> acc(count * width);
  copy_local(acc.data(), send, acc.size(), stream);
  if (n > 1 && count > 0) {
    const host_call call(*this);
    const chunks part{count, n};
    std::vector<std::byte> incoming(part.size(0) * width);  // the first chunk is the largest
    const int right = static_cast<int>((me + 1) % n), left = static_cast<int>((me + n - 1) % n);
    auto chunk = [&](std::size_t c) { return acc.data() + part.at(c) * width; };
    // Reduce-scatter: at step s, chunk me - s goes right and chunk me - s - 1 comes from the
    // left and is folded in; afterwards this rank holds chunk me + 1 reduced over every rank.
    for (std::size_t s = 0; s + 1 < n; ++s) {
      const std::size_t give = (me + n - s) % n, take = (me + 2 * n - s - 1) % n;
      send_recv_bytes(chunk(give), part.size(give) * width, right, incoming.data(), part.size(take) * width, left);
      fold_bytes(chunk(take), incoming.data(), part.size(take), type, op);
    }
    // All-gather: each reduced chunk travels once around the ring, so every rank gets the same bits.
    for (std::size_t s = 0; s + 1 < n; ++s) {
      const std::size_t give = (me + 1 + n - s) % n, take = (me + n - s) % n;
      send_recv_bytes(chunk(give), part.size(give) * width, right, chunk(take), part.size(take) * width, left);
    }
  }
  copy_local(recv, acc.data(), acc.size(), stream);
}

void communicator::all_to_all_v_bytes(const void* send, std::span<const std::size_t> send_counts,
                                      std::span<const std::size_t> send_displs, void* recv,
                                      std::span<const std::size_t> recv_counts,
                                      std::span<const std::size_t> recv_displs, cudaStream_t stream) {
  const int n = size(), me = rank();
  detail::expect_per_rank("all_to_all_v", send_counts.size(), n);
  detail::expect_per_rank("all_to_all_v", send_displs.size(), n);
  detail::expect_per_rank("all_to_all_v", recv_counts.size(), n);
  detail::expect_per_rank("all_to_all_v", recv_displs.size(), n);
  MULTIGPU_EXPECTS(send_counts[me] == recv_counts[me],
                   detail::concat("all_to_all_v: rank ", me, " sends ", send_counts[me],
                                  " bytes to itself but expects ", recv_counts[me]));
  wait_for_stream(stream);
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  copy_local(out + recv_displs[me], in + send_displs[me], send_counts[me], stream);
  for (int s = 1; s < n; ++s) {
    const int to = (me + s) % n, from = (me + n - s) % n;
    send_recv_bytes(in + send_displs[to], send_counts[to], to, out + recv_displs[from], recv_counts[from], from,
                    stream);
  }
}

void communicator::broadcast_bytes(void* data, std::size_t bytes, int root, cudaStream_t stream) {
  check_peer("broadcast", root);
  const int n = size();
  const int relative = (rank() - root + n) % n;  // the root is 0
  wait_for_stream(stream);
  // Round k: the ranks that have the data (relative < 2^k) send it 2^k further on.
  for (int reach = 1; reach < n; reach *= 2) {
    if (relative < reach) {
      if (relative + reach < n) send_recv_bytes(data, bytes, (relative + reach + root) % n, nullptr, 0, -1, stream);
    } else if (relative < 2 * reach) {
      send_recv_bytes(nullptr, 0, -1, data, bytes, (relative - reach + root) % n, stream);
    }
  }
}

void communicator::barrier() {
  const std::byte mine{1};
  std::vector<std::byte> all(static_cast<std::size_t>(size()));
  all_gather_bytes(host_memory, &mine, all.data(), 1);
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

void copy_bytes(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  if (is_device_pointer(dst) || is_device_pointer(src)) {
    // On the stream and waited for: a plain cudaMemcpy between device buffers may return
    // before the copy is done, and the library's streams do not follow the legacy stream.
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
  } else {
    std::memmove(dst, src, bytes);
  }
}

bool blocks_cover(std::span<const std::size_t> counts, std::span<const std::size_t> displs, std::size_t extent) {
  std::vector<std::pair<std::size_t, std::size_t>> blocks;  // (displacement, count), non-empty
  for (std::size_t r = 0; r < counts.size() && r < displs.size(); ++r)
    if (counts[r] > 0) blocks.emplace_back(displs[r], counts[r]);
  std::sort(blocks.begin(), blocks.end());
  std::size_t end = 0;
  for (const auto& [at, count] : blocks) {
    if (at != end) return false;  // a gap (or an overlap)
    end = at + count;
  }
  return end == extent;
}

void expect_per_rank(const char* call, std::size_t entries, int size) {
  MULTIGPU_EXPECTS(entries == static_cast<std::size_t>(size),
                   concat(call, ": ", entries, " per-rank entries for a communicator of size ", size,
                          " (the arrays come from a communicator of another size?)"));
}

}  // namespace detail
}  // namespace multigpu
