// The host side of the sample sort: sampling positions, the radix order of floats, and
// splitters that keep every bucket near n/k for duplicate-heavy keys and uneven layouts.
#include <multigpu/algorithm/detail/splitters.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

namespace mgd = multigpu::detail;

TEST(Splitters, RegularSamplingStaysInsideTheRun) {
  for (std::size_t slots : {1u, 3u, 8u, 100u})
    for (std::size_t size : {1u, 2u, 7u, 511u, 512u, 513u, 100003u, 1u << 24}) {
      const auto s = mgd::regular_sampling(size, slots);
      ASSERT_GE(s.count, 1u);
      EXPECT_LE(s.count, std::max<std::size_t>(size, 1));
      EXPECT_LT(s.first + (s.count - 1) * s.stride, size) << "size " << size << " slots " << slots;
    }
}

TEST(Splitters, RadixOrderOfFloats) {
  const mgd::radix_less<float> less;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(less(-0.0f, 0.0f));
  EXPECT_FALSE(less(0.0f, -0.0f));
  EXPECT_TRUE(less(inf, nan));
  EXPECT_TRUE(less(-nan, -inf));
  EXPECT_TRUE(less(-1.0f, -0.0f));
  EXPECT_TRUE(less(0.0f, 1e-30f));
  EXPECT_TRUE(less(-2.0f, -1.0f));
  const mgd::radix_less<double> dless;
  EXPECT_TRUE(dless(-std::numeric_limits<double>::infinity(), -1e300));
  EXPECT_TRUE(dless(std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()));
  const mgd::radix_less<int> iless;
  EXPECT_TRUE(iless(-5, 3));
}

/// Bucket sizes the splitters give, computed independently: each element's (key, index)
/// against every splitter.
std::vector<std::size_t> bucket_sizes(const std::vector<std::vector<int>>& runs, const std::vector<std::size_t>& offsets,
                                      const std::vector<mgd::indexed_key<int>>& splitters, std::size_t k) {
  std::vector<std::size_t> sizes(k, 0);
  for (std::size_t s = 0; s < runs.size(); ++s)
    for (std::size_t p = 0; p < runs[s].size(); ++p) {
      const int key = runs[s][p];
      const std::size_t index = offsets[s] + p;
      std::size_t bucket = 0;
      while (bucket < splitters.size() &&
             !(key < splitters[bucket].key || (key == splitters[bucket].key && index < splitters[bucket].index)))
        ++bucket;
      ++sizes[bucket];
    }
  return sizes;
}

TEST(Splitters, BucketsStayNearTheAverageForAnyDistributionAndLayout) {
  std::mt19937 rng(5);
  const std::size_t n = 100003;
  const std::size_t k = 8;
  std::vector<std::pair<std::string, std::vector<std::size_t>>> layouts{
      {"block", {12501, 12501, 12501, 12500, 12500, 12500, 12500, 12500}},
      {"half in one", {50003, 0, 10000, 10000, 10000, 10000, 10000, 0}},
      {"one segment holds all but one", {1, 0, 0, 0, 0, 0, 0, 100002}},
  };
  for (const char* dist : {"random", "all equal", "two values", "99% one value", "sorted"})
    for (const auto& [name, sizes] : layouts) {
      SCOPED_TRACE(std::string(dist) + ", " + name);
      std::vector<int> keys(n);
      std::uniform_int_distribution<int> wide(-1000000, 1000000);
      std::bernoulli_distribution coin(0.5), rare(0.01);
      const std::string d = dist;
      for (std::size_t i = 0; i < n; ++i) {
        if (d == "all equal")
          keys[i] = 3;
        else if (d == "two values")
          keys[i] = coin(rng) ? 1 : 2;
        else if (d == "99% one value")
          keys[i] = rare(rng) ? wide(rng) : 7;
        else if (d == "sorted")
          keys[i] = static_cast<int>(i);
        else
          keys[i] = wide(rng);
      }
      std::vector<std::vector<int>> runs(k);
      std::vector<std::size_t> offsets(k);
      std::vector<mgd::segment_samples<int>> samples(k);
      std::size_t offset = 0;
      for (std::size_t s = 0; s < k; ++s) {
        runs[s].assign(keys.begin() + offset, keys.begin() + offset + sizes[s]);
        std::stable_sort(runs[s].begin(), runs[s].end());
        offsets[s] = offset;
        if (sizes[s] > 0) {
          auto& set = samples[s];
          set.plan = mgd::regular_sampling(sizes[s], k);
          set.offset = offset;
          set.size = sizes[s];
          for (std::size_t j = 0; j < set.plan.count; ++j)
            set.keys.push_back(runs[s][set.plan.first + j * set.plan.stride]);
        }
        offset += sizes[s];
      }
      const auto splitters = mgd::choose_splitters(samples, n, k, mgd::radix_less<int>{});
      ASSERT_EQ(splitters.size(), k - 1);
      for (std::size_t j = 1; j < splitters.size(); ++j)
        EXPECT_FALSE(mgd::comes_before(splitters[j], splitters[j - 1], mgd::radix_less<int>{})) << "splitter " << j;
      const auto buckets = bucket_sizes(runs, offsets, splitters, k);
      for (std::size_t d = 0; d < k; ++d) EXPECT_LE(buckets[d], n / k + n / k / 10) << "bucket " << d;
    }
}

}  // namespace
