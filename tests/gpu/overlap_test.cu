// Overlapping source and destination ranges of one vector. copy behaves as memmove (every
// element is read before any is written); transform and the scans, given an output that
// overlaps an input of the same vector at another index, give what they would give with a
// separate output. Each result is compared with the same operation done on host copies.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <vector>

namespace {

using namespace test;

struct twice_plus_one {
  __host__ __device__ long long operator()(long long a) const { return 2 * a + 1; }
};
struct weighted_sum {
  __host__ __device__ long long operator()(long long a, long long b) const { return 3 * a + b; }
};
struct plus_ll {
  __host__ __device__ long long operator()(long long a, long long b) const { return a + b; }
};

std::vector<std::size_t> lengths() { return small_run() ? std::vector<std::size_t>{1, 2, 7, 1009} : std::vector<std::size_t>{1, 2, 7, 1009, 100003}; }

/// (source index, destination index, count) triples of overlapping ranges in a vector of n,
/// shifted both ways by 1, by a few, by about half and by all but one.
std::vector<std::array<std::size_t, 3>> shifts(std::size_t n) {
  std::vector<std::array<std::size_t, 3>> s;
  for (std::size_t d : {std::size_t{1}, std::size_t{3}, n / 2, n - 1}) {
    if (d == 0 || d >= n) continue;
    s.push_back({0, d, n - d});  // right: [0, n-d) -> [d, n)
    s.push_back({d, 0, n - d});  // left
  }
  if (n > 4) s.push_back({1, 2, n - 3});  // interior, right by one
  return s;
}

std::string where(const shape& sh, std::size_t n, const std::array<std::size_t, 3>& s) {
  return sh.name + ", n = " + std::to_string(n) + ", [" + std::to_string(s[0]) + ", +" + std::to_string(s[2]) +
         ") -> " + std::to_string(s[1]);
}

std::vector<long long> host_data(std::size_t n) {
  std::vector<long long> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<long long>(i * 7919 % 1000) - 500;
  return v;
}

TEST(Overlap, CopyWithinOneVectorIsAMemmove) {
  for (const auto& sh : shapes())
    for (std::size_t n : lengths())
      for (const auto& s : shifts(n)) {
        std::vector<long long> want = host_data(n);
        mg::distributed_vector<long long> v(want, sh.group);
        const auto src = v.cbegin() + static_cast<std::ptrdiff_t>(s[0]);
        const std::uint64_t staged = mg::diagnostics::count(mg::diagnostics::path::overlap_staged_copy);
        auto end = mg::copy(src, src + static_cast<std::ptrdiff_t>(s[2]), v.begin() + static_cast<std::ptrdiff_t>(s[1]));
        EXPECT_EQ(end.index(), s[1] + s[2]);
        // Only ranges that share elements go through a temporary (a shift by all but one of
        // n = 2 elements, or by n - 1 of any n, moves one element that is not overwritten).
        const std::size_t gap = s[0] < s[1] ? s[1] - s[0] : s[0] - s[1];
        EXPECT_EQ(mg::diagnostics::count(mg::diagnostics::path::overlap_staged_copy), staged + (gap < s[2] ? 1 : 0))
            << where(sh, n, s);
        std::vector<long long> original = want;
        std::copy(original.begin() + s[0], original.begin() + s[0] + s[2], want.begin() + s[1]);
        EXPECT_TRUE(same_elements(mg::to_vector(v), want)) << where(sh, n, s);
      }
}

TEST(Overlap, ConsecutiveShiftsNeedNoHostSynchronisation) {
  // Shifting right by one k times, with no read in between, moves the data by k.
  for (const auto& sh : shapes()) {
    const std::size_t n = 1009, k = 5;
    std::vector<long long> want = host_data(n);
    mg::distributed_vector<long long> v(want, sh.group);
    for (std::size_t i = 0; i < k; ++i) mg::copy(v.cbegin(), v.cend() - 1, v.begin() + 1);
    for (std::size_t i = 0; i < k; ++i) std::copy_backward(want.begin(), want.end() - 1, want.end());
    EXPECT_TRUE(same_elements(mg::to_vector(v), want)) << sh.name;
  }
}

TEST(Overlap, ShiftedTransformReadsEveryInputBeforeWriting) {
  for (const auto& sh : shapes())
    for (std::size_t n : lengths())
      for (const auto& s : shifts(n)) {
        const std::vector<long long> original = host_data(n);
        const auto in = [&](const mg::distributed_vector<long long>& v) { return v.cbegin() + static_cast<std::ptrdiff_t>(s[0]); };
        const auto out = [&](mg::distributed_vector<long long>& v) { return v.begin() + static_cast<std::ptrdiff_t>(s[1]); };
        const auto count = static_cast<std::ptrdiff_t>(s[2]);
        {  // unary, output shifted against the input
          mg::distributed_vector<long long> v(original, sh.group);
          mg::transform(in(v), in(v) + count, out(v), twice_plus_one{});
          std::vector<long long> want = original;
          for (std::size_t i = 0; i < s[2]; ++i) want[s[1] + i] = 2 * original[s[0] + i] + 1;
          EXPECT_TRUE(same_elements(mg::to_vector(v), want)) << "unary, " << where(sh, n, s);
        }
        {  // binary, the second input is the vector written, from another index
          mg::distributed_vector<long long> v(original, sh.group);
          mg::distributed_vector<long long> a(original, sh.group);
          mg::transform(a.cbegin() + static_cast<std::ptrdiff_t>(s[1]), a.cbegin() + static_cast<std::ptrdiff_t>(s[1]) + count,
                        in(v), out(v), weighted_sum{});
          std::vector<long long> want = original;
          for (std::size_t i = 0; i < s[2]; ++i) want[s[1] + i] = 3 * original[s[1] + i] + original[s[0] + i];
          EXPECT_TRUE(same_elements(mg::to_vector(v), want)) << "binary, " << where(sh, n, s);
        }
        {  // scans
          mg::distributed_vector<long long> v(original, sh.group), w(original, sh.group);
          mg::inclusive_scan(in(v), in(v) + count, out(v), plus_ll{});
          mg::exclusive_scan(in(w), in(w) + count, out(w), 10LL, plus_ll{});
          std::vector<long long> inclusive = original, exclusive = original;
          long long sum = 0;
          for (std::size_t i = 0; i < s[2]; ++i) {
            exclusive[s[1] + i] = 10 + sum;
            sum += original[s[0] + i];
            inclusive[s[1] + i] = sum;
          }
          EXPECT_TRUE(same_elements(mg::to_vector(v), inclusive)) << "inclusive_scan, " << where(sh, n, s);
          EXPECT_TRUE(same_elements(mg::to_vector(w), exclusive)) << "exclusive_scan, " << where(sh, n, s);
        }
      }
}

TEST(Overlap, InPlaceFromTheSameIndexStaysInPlace) {
  for (const auto& sh : shapes()) {
    const std::vector<long long> original = host_data(1009);
    mg::distributed_vector<long long> v(original, sh.group);
    const std::uint64_t staged = mg::diagnostics::count(mg::diagnostics::path::overlap_staged_copy);
    mg::transform(v.cbegin(), v.cend(), v.begin(), twice_plus_one{});
    mg::inclusive_scan(v.cbegin(), v.cend(), v.begin(), plus_ll{});
    mg::copy(v.cbegin() + 3, v.cend(), v.begin() + 3);
    EXPECT_EQ(mg::diagnostics::count(mg::diagnostics::path::overlap_staged_copy), staged)
        << "a copy onto itself went through a temporary";
    std::vector<long long> want(original.size());
    long long sum = 0;
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = sum += 2 * original[i] + 1;
    EXPECT_TRUE(same_elements(mg::to_vector(v), want)) << sh.name;
  }
}

}  // namespace
