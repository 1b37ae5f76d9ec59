#pragma once
// Algorithms over team_vectors: the same names as the single-process algorithms, with
// overloads taking team_vector. Contains device code (it runs the single-process algorithms
// on each rank's local vector): include it from CUDA translation units.
//
// Local (no communication, any order): fill, iota, for_each, transform.
// Collective (every rank calls them in the same order, team.hpp): reduce, inclusive_scan,
// exclusive_scan, count, count_if, min_element, max_element, equal, to_vector,
// redistribute, exchange_halos; from team_sort.hpp: sort, stable_sort, sort_by_key,
// stable_sort_by_key, is_sorted, lower_bound, upper_bound; from team_gather.hpp: gather,
// scatter; from team_select.hpp: copy_if, remove_copy_if, rebalance, copy (local when the
// layouts agree).
//
// Operators of reduce, scans and min/max_element run on the device (local step) and on the
// host (combining ranks' partial results in rank order), so they must be
// __host__ __device__; they need associativity, not commutativity. Each of these sends one
// small all_gather per call (the rank's partial and the collective's check together).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/count.hpp>
#include <multigpu/algorithm/detail/local/functors.hpp>
#include <multigpu/algorithm/detail/collective/halo_exchange.hpp>
#include <multigpu/algorithm/equal.hpp>
#include <multigpu/algorithm/fill.hpp>
#include <multigpu/algorithm/for_each.hpp>
#include <multigpu/algorithm/min_max_element.hpp>
#include <multigpu/algorithm/reduce.hpp>
#include <multigpu/algorithm/scan.hpp>
#include <multigpu/algorithm/transform.hpp>
#include <multigpu/team/team_exchange.hpp>
#include <multigpu/team/team_gather.hpp>
#include <multigpu/team/team_plan.hpp>
#include <multigpu/team/team_select.hpp>
#include <multigpu/team/team_sort.hpp>
#include <multigpu/team/team_vector.hpp>
#include <multigpu/container/halo_plan.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/extension/halo.hpp>  // exchange_halos of a distributed_vector, beside the team form

#include <cuda/functional>
#include <cuda/std/functional>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace multigpu {
namespace detail {

template <class Op, class... Candidates>
constexpr bool is_one_of = (std::is_same_v<Op, Candidates> || ...);

/// The engine's own reduction for Op on T, where there is one: sums, products, minima and
/// maxima of arithmetic types (cuda::std::plus, std::plus, cuda::std::multiplies,
/// std::multiplies, cuda::minimum, cuda::maximum, typed or not).
template <class T, class Op>
constexpr std::optional<reduce_op> builtin_reduce_op() {
  if constexpr (!reducible_type<T>) {
    return std::nullopt;
  } else if constexpr (is_one_of<Op, cuda::std::plus<>, cuda::std::plus<T>, std::plus<>, std::plus<T>>) {
    return reduce_op::sum;
  } else if constexpr (is_one_of<Op, cuda::std::multiplies<>, cuda::std::multiplies<T>, std::multiplies<>,
                                 std::multiplies<T>>) {
    return reduce_op::prod;
  } else if constexpr (is_one_of<Op, cuda::minimum<>, cuda::minimum<T>>) {
    return reduce_op::min;
  } else if constexpr (is_one_of<Op, cuda::maximum<>, cuda::maximum<T>>) {
    return reduce_op::max;
  } else {
    return std::nullopt;
  }
}

template <class T>
T builtin_identity(reduce_op op) {
  using limits = std::numeric_limits<T>;
  switch (op) {
    case reduce_op::sum: return T(0);
    case reduce_op::prod: return T(1);
    case reduce_op::min: return limits::has_infinity ? limits::infinity() : limits::max();
    case reduce_op::max: return limits::has_infinity ? -limits::infinity() : limits::lowest();
  }
  return T(0);
}

/// The reduction of a local vector's elements without an initial value, accumulated in Acc
/// (none when empty): with the operator's identity as the initial value where the engine
/// knows it, else starting from the first element.
template <class Acc, class T, class Op>
std::optional<Acc> local_partial(const distributed_vector<T>& v, Op op) {
  if (v.empty()) return std::nullopt;
  constexpr std::optional<reduce_op> builtin = builtin_reduce_op<Acc, Op>();
  if constexpr (builtin.has_value())
    return reduce(v, builtin_identity<Acc>(*builtin), op);
  else
    return reduce(v.begin() + 1, v.end(), static_cast<Acc>(v.read(0)), op);
}

/// Whether a rank after this one holds elements: only then does this rank's total reach anyone
/// in a scan (the last rank with elements, and a team of one, skip computing it).
template <class T>
bool later_ranks_hold_elements(const team_vector<T>& v) {
  return v.offset() + v.local_size() < v.size();
}

/// A rank's total for the scans: its local reduction where a later rank needs it, else none.
template <class T, class Op>
std::optional<T> scan_partial(const team_vector<T>& v, Op op) {
  if (!later_ranks_hold_elements(v)) return std::nullopt;
  return local_partial<T>(v.local(), op);
}

template <class A, class B>
void expect_same_layout(const char* algorithm, const team_vector<A>& a, const team_vector<B>& b) {
  expect_same_team(algorithm, a.team(), b.team());
  MULTIGPU_EXPECTS(a.layout() == b.layout(),
                   concat(algorithm, ": the vectors are laid out differently over the ranks (sizes ", a.size(), " and ",
                          b.size(), "); redistribute one first"));
}

/// The first best element over the team; `better(x, y)` says x beats y.
template <class T, class Better>
std::optional<ranked_element<T>> team_best(team_operation op, const team_vector<T>& v, Better better) {
  const auto all = gather_collective<ranked_element<T>>(v.team(), op, sizeof(T), [&]() -> std::optional<ranked_element<T>> {
    if (v.local().empty()) return std::nullopt;
    // min_element by `better` is the first element nothing beats, in local order.
    const std::size_t local = min_element(v.local(), better).index();
    return ranked_element<T>{v.offset() + local, v.local().read(local)};
  });
  return first_best_in_rank_order<T>(all, better);
}

}  // namespace detail

// ---- Local algorithms ---------------------------------------------------------------------

template <class T>
void fill(team_vector<T>& v, const std::type_identity_t<T>& value) {
  fill(v.local(), value);
}

/// Global element i becomes value + i, computed as value + T(i) (rounded once, as the
/// single-process iota).
template <class T>
void iota(team_vector<T>& v, std::type_identity_t<T> value) {
  detail::iota_from(v.local().begin(), v.local().end(), value, v.offset());
}

template <class T, class F>
void for_each(team_vector<T>& v, F f) {
  for_each(v.local(), f);
}

/// out[i] = f(in[i]); in and out on one team with one layout (std::invalid_argument otherwise).
template <class T, class U, class F>
void transform(const team_vector<T>& in, team_vector<U>& out, F f) {
  detail::expect_same_layout("transform", in, out);
  transform(in.local().begin(), in.local().end(), out.local().begin(), f);
}

// ---- Collective algorithms ----------------------------------------------------------------

/// init op x0 op x1 ... in global order, on every rank, accumulated in Init (as std::reduce).
/// Each rank reduces its elements; one all_gather brings every rank's partial (with the
/// collective's check, team.hpp), and every rank folds them in rank order, so the operator
/// needs associativity, not commutativity, and every rank gets the same bits.
template <class T, class Init, class Op = cuda::std::plus<>>
Init reduce(const team_vector<T>& v, Init init, Op op = {}) {
  const auto partials = detail::gather_collective<Init>(v.team(), team_operation::reduce, sizeof(Init),
                                                        [&] { return detail::local_partial<Init>(v.local(), op); });
  const std::optional<Init> all = fold_in_rank_order<Init>(partials, op);
  return all ? static_cast<Init>(op(init, *all)) : init;
}

template <class T>
T reduce(const team_vector<T>& v) {
  return reduce(v, T{}, cuda::std::plus<>{});
}

/// out[i] = in[0] op ... op in[i] in global order. in and out on one team with one layout;
/// they may be the same vector. Each rank reduces its elements (one read), one all_gather
/// brings every rank's total, and each rank scans once with the fold of the ranks before it
/// as the initial value (one read and one write): three passes over the data. The last rank
/// with elements (and a team of one) skips the reduction, whose total nobody needs: two passes.
template <class T, class Op = cuda::std::plus<>>
void inclusive_scan(const team_vector<T>& in, team_vector<T>& out, Op op = {}) {
  detail::expect_same_layout("inclusive_scan", in, out);
  const auto totals = detail::gather_collective<T>(in.team(), team_operation::inclusive_scan, sizeof(T),
                                                   [&] { return detail::scan_partial(in, op); });
  // The local scan after the exchange is agreed too, so that the call ends alike everywhere.
  detail::agreed_step(in.team(), team_operation::inclusive_scan, "local scan", [&] {
    if (in.local().empty()) return;
    const std::optional<T> carry = rank_carries<T>(totals, op)[static_cast<std::size_t>(in.rank())];
    if (carry)
      inclusive_scan(in.local().begin(), in.local().end(), out.local().begin(), op, *carry);
    else
      inclusive_scan(in.local(), out.local(), op);
  });
}

/// out[i] = init op in[0] op ... op in[i-1] in global order (out[0] = init).
template <class T, class Op = cuda::std::plus<>>
void exclusive_scan(const team_vector<T>& in, team_vector<T>& out, std::type_identity_t<T> init, Op op = {}) {
  detail::expect_same_layout("exclusive_scan", in, out);
  const auto totals = detail::gather_collective<T>(in.team(), team_operation::exclusive_scan, sizeof(T),
                                                   [&] { return detail::scan_partial(in, op); });
  detail::agreed_step(in.team(), team_operation::exclusive_scan, "local scan", [&] {
    if (in.local().empty()) return;
    const std::optional<T> carry = rank_carries<T>(totals, op)[static_cast<std::size_t>(in.rank())];
    exclusive_scan(in.local(), out.local(), carry ? op(init, *carry) : init, op);
  });
}

template <class T, class Pred>
std::size_t count_if(const team_vector<T>& v, Pred pred) {
  const auto counts = detail::gather_collective<std::uint64_t>(v.team(), team_operation::count, sizeof(T), [&] {
    return std::optional<std::uint64_t>(count_if(v.local(), pred));
  });
  std::size_t total = 0;
  for (const auto& c : counts) total += static_cast<std::size_t>(*c);
  return total;
}

template <class T>
std::size_t count(const team_vector<T>& v, const std::type_identity_t<T>& value) {
  return count_if(v, detail::equal_to_value<T>{value});
}

/// The first minimum in global order: its global index and value, on every rank; none for
/// an empty vector.
template <class T, class Less = cuda::std::less<>>
std::optional<ranked_element<T>> min_element(const team_vector<T>& v, Less less = {}) {
  return detail::team_best(team_operation::min_element, v, less);
}

/// The first maximum in global order, as min_element.
template <class T, class Less = cuda::std::less<>>
std::optional<ranked_element<T>> max_element(const team_vector<T>& v, Less less = {}) {
  using by = typename detail::greater_than<T>::template by<Less>;
  return detail::team_best(team_operation::max_element, v, by{less});
}

/// Moves the elements of `from` into `to`, which may be laid out differently over the ranks
/// (one all_to_all_v: of the local parts' device memory where the team's exchange_path allows
/// it, else through host memory). Same team and global size (std::invalid_argument
/// otherwise). Halos of `to` are not refreshed.
template <class T>
void redistribute(const team_vector<T>& from, team_vector<T>& to) {
  detail::expect_same_team("redistribute", from.team(), to.team());
  MULTIGPU_EXPECTS(from.size() == to.size(), detail::concat("redistribute: the vectors hold ", from.size(), " and ",
                                                            to.size(), " elements"));
  if (&from == &to) return;
  const redistribution_plan plan = plan_redistribution(from.layout(), to.layout(), static_cast<std::size_t>(from.rank()));
  const team& t = from.team();
  constexpr team_operation op = team_operation::redistribute;
  // The entry carries the exchange's preparation (so that a failure there fails the call on
  // every rank first), then one all_to_all_v and an agreed step that puts what arrived in
  // place (bulk_exchange).
  detail::bulk_exchange<T> exchange(t, plan, from.local(), to.local(),
                                    detail::exchange_on_device(t, from.local(), to.local()));
  detail::run_collective(t, op, sizeof(T), [&] { exchange.prepare(); });
  exchange.move();
  detail::agreed_step(t, op, "upload", [&] { exchange.put_in_place(); });
}

/// Same size and elements, in global order; a and b on one team (std::invalid_argument
/// otherwise), possibly laid out differently (b is then redistributed into a temporary
/// laid out as a, on a's local group).
template <class T>
bool equal(const team_vector<T>& a, const team_vector<T>& b) {
  detail::expect_same_team("equal", a.team(), b.team());
  if (a.size() != b.size()) return false;  // every rank knows both sizes: no collective needed
  if (a.layout() != b.layout()) {
    team_vector<T> aligned(a.team(), a.local_size(), a.local().group());
    redistribute(b, aligned);
    return equal(a, aligned);
  }
  const auto all = detail::gather_collective<std::uint8_t>(a.team(), team_operation::equal, sizeof(T), [&] {
    return std::optional<std::uint8_t>(equal(a.local(), b.local()) ? 1 : 0);
  });
  for (const auto& e : all)
    if (*e == 0) return false;
  return true;
}

namespace detail {
/// Gathers v in global order through host memory to every rank (root < 0, an all_gather_v)
/// or to `root` alone (a gather; the others get an empty vector), in one all_to_all_v.
template <class T>
std::vector<T> gather_to_host(const team_vector<T>& v, int root) {
  const std::size_t ranks = static_cast<std::size_t>(v.team().size());
  const bool receives = root < 0 || v.rank() == root;
  auto [mine, all] = run_collective(v.team(), team_operation::to_vector, sizeof(T), [&] {
    return std::pair<std::vector<T>, std::vector<T>>(to_vector(v.local()), std::vector<T>(receives ? v.size() : 0));
  });
  std::vector<std::size_t> send_counts(ranks, 0), send_displs(ranks, 0), recv_counts(ranks, 0), recv_displs(ranks, 0);
  for (std::size_t r = 0; r < ranks; ++r)
    if (root < 0 || r == static_cast<std::size_t>(root)) send_counts[r] = mine.size();
  if (receives)
    for (std::size_t r = 0; r < ranks; ++r) {
      recv_counts[r] = v.layout().segment_size(r);
      recv_displs[r] = v.layout().segment_offset(r);
    }
  v.team().comm().all_to_all_v(host_memory, mine.data(), std::span<const std::size_t>(send_counts),
                               std::span<const std::size_t>(send_displs), all.data(),
                               std::span<const std::size_t>(recv_counts), std::span<const std::size_t>(recv_displs));
  return all;
}
}  // namespace detail

/// The whole vector in global order on every rank (an all_gather_v through host memory).
template <class T>
std::vector<T> to_vector(const team_vector<T>& v) {
  return detail::gather_to_host(v, -1);
}

/// The whole vector on rank `root` only (a gather); the other ranks get an empty vector.
/// Every rank calls it with the same root (std::out_of_range for a root outside the team).
template <class T>
std::vector<T> to_vector(const team_vector<T>& v, int root) {
  MULTIGPU_EXPECTS_AS(root >= 0 && root < v.team().size(), std::out_of_range,
                      detail::concat("to_vector: root ", root, " is not a rank of a team of size ", v.team().size()));
  return detail::gather_to_host(v, root);
}

/// Refreshes every halo of v: between the local segments of each rank (as the
/// single-process exchange_halos), then across ranks, where a rank's first non-empty local
/// segment's left halo gets the last halo().width elements of the previous non-empty rank
/// and its last non-empty segment's right halo the first elements of the next one
/// (wrapping around when periodic), in one all_to_all_v through host memory. Every
/// non-empty rank and local segment must hold at least halo().width elements
/// (std::invalid_argument on the ranks that break it, comm_error on the others).
template <class T>
void exchange_halos(team_vector<T>& v) {
  const std::size_t width = v.halo().width;
  if (width == 0) return;
  const std::vector<halo_move> moves = plan_halo_exchange(v.layout(), width, v.halo().periodic);
  const std::size_t me = static_cast<std::size_t>(v.rank());
  const std::size_t ranks = static_cast<std::size_t>(v.team().size());
  // What this rank sends to and receives from each rank, in plan order (the receivers walk
  // the plan in the same order).
  std::vector<std::size_t> send_counts(ranks, 0), send_displs(ranks, 0), recv_counts(ranks, 0), recv_displs(ranks, 0);
  std::size_t sent = 0, received = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    send_displs[r] = sent;
    recv_displs[r] = received;
    for (const halo_move& m : moves) {
      if (m.src_slot == me && m.dst_slot == r) send_counts[r] += m.count;
      if (m.dst_slot == me && m.src_slot == r) recv_counts[r] += m.count;
    }
    sent += send_counts[r];
    received += recv_counts[r];
  }
  // Local step: the halos inside this rank, what this rank sends, and room for what it
  // receives (so that a failure on one rank fails the call on all before the exchange).
  auto [send, recv] = detail::run_collective(v.team(), team_operation::exchange_halos, sizeof(T), [&] {
    detail::halo_exchange(v.local());
    std::pair<std::vector<T>, std::vector<T>> buffers;
    if (ranks == 1) return buffers;  // a team of one wrapped around locally
    std::vector<T>& out = buffers.first;
    for (std::size_t dst = 0; dst < ranks; ++dst)
      for (const halo_move& m : moves)
        if (m.src_slot == me && m.dst_slot == dst) {
          const std::size_t at = out.size();
          out.resize(at + m.count);
          detail::vector_access::download(v.local(), m.src_offset, out.data() + at, m.count);
        }
    buffers.second.resize(received);
    return buffers;
  });
  if (ranks == 1) return;
  v.team().comm().all_to_all_v(host_memory, send.data(), std::span<const std::size_t>(send_counts),
                               std::span<const std::size_t>(send_displs), recv.data(),
                               std::span<const std::size_t>(recv_counts), std::span<const std::size_t>(recv_displs));
  // Each received block goes into the halo storage beside this rank's outer segments (an
  // agreed step, so that the call ends alike on every rank).
  detail::agreed_step(v.team(), team_operation::exchange_halos, "copy into the halos", [&] {
    std::vector<segment_view<T>> segments;
    for (std::size_t s = 0; s < v.local().segment_count(); ++s) segments.push_back(v.local().segment(s));
    const segment_view<T>* first = nullptr;
    const segment_view<T>* last = nullptr;
    for (const segment_view<T>& s : segments)
      if (!s.empty()) {
        if (first == nullptr) first = &s;
        last = &s;
      }
    std::size_t at = 0;
    for (std::size_t src = 0; src < ranks; ++src)
      for (const halo_move& m : moves)
        if (m.dst_slot == me && m.src_slot == src) {
          const segment_view<T>& s = m.to_left ? *first : *last;
          T* target = m.to_left ? s.data() - width : s.data() + s.size();
          device_guard guard(s.device());
          MULTIGPU_CUDA_TRY(cudaMemcpyAsync(target, recv.data() + at, m.count * sizeof(T), cudaMemcpyHostToDevice,
                                            s.stream()));
          MULTIGPU_CUDA_TRY(cudaStreamSynchronize(s.stream()));  // `recv` is freed on return
          at += m.count;
        }
  });
}

}  // namespace multigpu
