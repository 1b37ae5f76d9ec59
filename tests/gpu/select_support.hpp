#pragma once
// What the tests of the size-changing algorithms share (copy_if_test.cu, partition_test.cu,
// unique_test.cu): element keys, a predicate, inputs whose survivors are known (nothing,
// everything, one segment, only the last element), inputs with runs, the cases, and the loops
// over shapes, sizes and cases.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <cmath>
#include <vector>

namespace test::selection {

template <class T>
__host__ __device__ double key(const T& x) {
  if constexpr (std::is_same_v<T, vec3>)
    return x.x;
  else
    return static_cast<double>(x);
}

/// key(x) > bound.
template <class T>
struct above {
  double bound;
  __host__ __device__ bool operator()(const T& x) const { return key(x) > bound; }
};

template <class T>
T with_key(double k) {
  if constexpr (std::is_same_v<T, vec3>)
    return {k, -k, 0.5};
  else
    return static_cast<T>(k);
}

/// The input of one case: random keys in [-100, 100], and where `marked` says, keys of 300 (a
/// whole segment) or 500 (the last element), so that a bound of 200 keeps only those.
enum class marked { none, one_segment, last_element };

template <class T>
std::vector<T> input(std::size_t n, const mg::distribution& layout, marked m) {
  std::vector<T> v = random_vector<T>(n);
  if (m == marked::one_segment && layout.segment_count() > 0) {
    const std::size_t slot = layout.segment_count() / 2;
    for (std::size_t i = 0; i < layout.segment_size(slot); ++i) v[layout.segment_offset(slot) + i] = with_key<T>(300);
  }
  if (m == marked::last_element && n > 0) v[n - 1] = with_key<T>(500);
  return v;
}

/// The survivors per slot, as the layout-keeping form must lay them out.
template <class T, class Pred>
std::vector<std::size_t> survivors_per_slot(const std::vector<T>& host, const mg::distribution& layout, Pred pred) {
  std::vector<std::size_t> counts(layout.segment_count(), 0);
  for (std::size_t s = 0; s < counts.size(); ++s)
    for (std::size_t i = 0; i < layout.segment_size(s); ++i) counts[s] += pred(host[layout.segment_offset(s) + i]) ? 1 : 0;
  return counts;
}

struct select_case {
  const char* name;
  double bound;
  marked mark;
};
inline const select_case cases[] = {
    {"half", 0, marked::none},
    {"nothing", 1000, marked::none},
    {"everything", -1000, marked::none},
    {"one segment", 200, marked::one_segment},
    {"only the last element", 400, marked::last_element},
};

using select_types = ::testing::Types<int, long long, float, double, vec3>;

/// The loops of the selection tests: for every shape of exchange_shapes(), every size of
/// sizes(slots, large) and every case (at the largest size only the case of bound 0), the input
/// on the shape's group `v` and on the host `host`, under a trace naming all three; then
/// body(s, n, v, host, pred) with pred = above<T>{case's bound}. A fatal failure in the body
/// ends the loops, as an ASSERT_ in the test's own body would.
template <class T, class Body>
void for_each_select_case(bool large, Body&& body) {
  for (const auto& s : exchange_shapes())
    for (std::size_t n : sizes(s.group.size(), large))
      for (const auto& c : cases) {
        if (n > 2000000 && c.bound != 0) continue;  // the large size: one predicate
        SCOPED_TRACE(testing::Message() << s.name << " n=" << n << " keeps " << c.name);
        mg::distributed_vector<T> v(n, s.group);
        const auto host = input<T>(n, v.layout(), c.mark);
        mg::copy(host.begin(), host.end(), v.begin());
        const above<T> pred{c.bound};
        body(s, n, v, host, pred);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

/// Whether key(a) and key(b) fall in the same interval of ten: runs of "equal" elements that
/// are not identical.
template <class T>
struct same_tens {
  __host__ __device__ bool operator()(const T& a, const T& b) const {
    return floor(key(a) / 10.0) == floor(key(b) / 10.0);
  }
};

/// Inputs with runs: none (random keys), runs of three, one run over everything, and runs of
/// about a third of the vector, which cross slots.
template <class T>
std::vector<T> runs_input(std::size_t n, int kind) {
  if (kind == 0) return random_vector<T>(n);
  std::vector<T> v(n);
  const std::size_t length = kind == 1 ? 3 : (kind == 2 ? n + 1 : n / 3 + 1);
  for (std::size_t i = 0; i < n; ++i) v[i] = with_key<T>(static_cast<double>((i / length) % 50));
  return v;
}

}  // namespace test::selection
