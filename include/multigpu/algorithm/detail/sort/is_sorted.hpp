#pragma once
// is_sorted over a vector: each segment describes its run, and the "reduce partials in order"
// collective joins the runs, checking each boundary between segments.

#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/tuning.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/container/distributed_vector.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace multigpu::detail {

/// What is_sorted knows of a run of consecutive elements: its first and last element and
/// whether no element comes before its predecessor. `empty` marks the identity.
template <class T>
struct sorted_run {
  unsigned sorted;
  unsigned empty;
  T first;
  T last;
};

/// Joins two adjacent runs (associative, not commutative): sorted when both are and the
/// right run's first element does not come before the left run's last.
template <class Comp>
struct join_sorted_runs {
  Comp comp;
  template <class T>
  __host__ __device__ sorted_run<T> operator()(const sorted_run<T>& left, const sorted_run<T>& right) const {
    if (left.empty) return right;
    if (right.empty) return left;
    sorted_run<T> joined = left;
    joined.last = right.last;
    joined.sorted = left.sorted && right.sorted && !comp(right.first, left.last) ? 1u : 0u;
    return joined;
  }
};

/// *out = the run x[0, n) taken as sorted (n > 0); find_descent_in_run corrects that.
/// Written whole, padding included, so the fold reads no uninitialised byte.
template <class T>
__global__ void describe_run(const T* x, std::size_t n, sorted_run<T>* out) {
  sorted_run<T> run;
  memset(&run, 0, sizeof(run));
  run.sorted = 1u;
  run.first = x[0];
  run.last = x[n - 1];
  memcpy(out, &run, sizeof(run));
}

/// out->sorted = 0 when some x[i+1] comes before x[i]. Every writer writes the same value.
template <class T, class Comp>
__global__ void find_descent_in_run(const T* x, std::size_t n, Comp comp, sorted_run<T>* out) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i + 1 < n; i += stride)
    if (comp(x[i + 1], x[i])) {
      *static_cast<volatile unsigned*>(&out->sorted) = 0u;
      return;
    }
}

/// is_sorted as a local step per segment (its run: first, last, sorted inside) and the
/// in-order reduction of the runs, which checks each boundary between segments: every
/// segment's kernels run at once, and the host waits once, for the result.
template <class T, class Comp>
bool is_sorted_impl(const distributed_vector<T>& v, const Comp& comp) {
  if (v.size() < 2) return true;
  sorted_run<T> identity;
  std::memset(&identity, 0, sizeof(identity));
  identity.sorted = 1u;
  identity.empty = 1u;
  range_ref<T> range(v, 0, v.size());
  const sorted_run<T> whole =
      reduce_pieces<sorted_run<T>, sorted_run<T>>(
          range, join_sorted_runs<Comp>{comp}, identity,
          [&](const piece_context& ctx, sorted_run<T>* out, bool) {
            const T* x = range.data(ctx.index);
            describe_run<<<1, 1, 0, ctx.stream>>>(x, ctx.count, out);
            check_launch("is_sorted");
            if (ctx.count > 1) {
              const unsigned blocks =
                  std::min(blocks_for(ctx.count, tuning::elementwise_threads), tuning::is_sorted_max_blocks);
              find_descent_in_run<<<blocks, tuning::elementwise_threads, 0, ctx.stream>>>(x, ctx.count, comp, out);
              check_launch("is_sorted");
            }
          })
          .get();
  return whole.sorted != 0;
}

}  // namespace multigpu::detail
