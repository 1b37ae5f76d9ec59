// gather and scatter against hand-built host results, with maps on the device (same or
// another layout) and on the host, and their errors.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>
#include <numeric>

namespace {

using namespace test;

std::vector<std::size_t> gather_sizes(std::size_t k) {
  std::vector<std::size_t> n{0, 1, 2, k - 1, k + 1, 1009};
  if (!small_run()) n.push_back((std::size_t{1} << 20) + 7);
  return n;
}

/// A layout of n elements over k slots that is not the block layout: the first slot takes
/// half, the rest share the remainder (the last slot the excess).
mg::distribution skewed_layout(std::size_t n, std::size_t k) {
  std::vector<std::size_t> sizes(k, 0);
  if (k == 1) {
    sizes[0] = n;
  } else {
    sizes[0] = n / 2;
    const std::size_t rest = n - sizes[0];
    for (std::size_t s = 1; s < k; ++s) sizes[s] = rest / (k - 1);
    sizes[k - 1] += rest - (rest / (k - 1)) * (k - 1);
  }
  return mg::distribution::from_sizes(sizes);
}

template <class I>
std::vector<I> random_map(std::size_t n, std::size_t range) {
  std::vector<I> map(n);
  std::uniform_int_distribution<std::size_t> d(0, range - 1);
  for (auto& x : map) x = static_cast<I>(d(rng()));
  return map;
}

template <class T>
class Gather : public ::testing::Test {};
using gather_types = ::testing::Types<int, double, vec3>;
TYPED_TEST_SUITE(Gather, gather_types);

TYPED_TEST(Gather, GatherMatchesTheHostForEveryKindOfMap) {
  using T = TypeParam;
  for (const auto& s : exchange_shapes())
    for (std::size_t n : gather_sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const std::size_t k = s.group.size();
      const auto input_host = random_vector<T>(n);
      const std::size_t m = n + n / 3;  // the output is longer than the input
      const auto map_host = n > 0 ? random_map<int>(m, n) : std::vector<int>{};
      const std::size_t out_size = map_host.size();
      std::vector<T> want(out_size);
      for (std::size_t i = 0; i < out_size; ++i) want[i] = input_host[static_cast<std::size_t>(map_host[i])];

      mg::distributed_vector<T> input(input_host, s.group);
      // The three outputs live at once: had one shared the memory of the one before, which
      // holds the same answer, an element that a gather never wrote would still compare equal.
      std::vector<std::size_t> reversed_sizes(k);
      const auto block = mg::distribution::block(out_size, k);
      for (std::size_t t = 0; t < k; ++t) reversed_sizes[t] = block.segment_size(k - 1 - t);
      mg::distributed_vector<T> in_block(out_size, s.group), in_reversed(s.group, mg::distribution::from_sizes(reversed_sizes)),
          from_host(out_size, s.group);
      // Map in the block layout (lined up with the output).
      {
        mg::distributed_vector<int> map(map_host, s.group);
        mg::gather(map, input, in_block);
        EXPECT_TRUE(same_elements(mg::to_vector(in_block), want));
      }
      // Map in another layout, and an output in yet another.
      {
        mg::distributed_vector<int> map(s.group, skewed_layout(out_size, k));
        mg::detail::vector_access::upload(map, 0, map_host.data(), out_size);
        mg::gather(map, input, in_reversed);
        EXPECT_TRUE(same_elements(mg::to_vector(in_reversed), want));
      }
      // Host map.
      mg::gather(map_host, input, from_host);
      EXPECT_TRUE(same_elements(mg::to_vector(from_host), want));
    }
}

TYPED_TEST(Gather, ScatterMatchesTheHostAndLeavesOtherElementsAlone) {
  using T = TypeParam;
  for (const auto& s : exchange_shapes())
    for (std::size_t n : gather_sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const std::size_t k = s.group.size();
      const std::size_t out_size = n + n / 2 + 1;
      // Distinct targets: a random permutation of the output's positions, cut to n.
      std::vector<long long> targets(out_size);
      std::iota(targets.begin(), targets.end(), 0);
      std::shuffle(targets.begin(), targets.end(), rng());
      targets.resize(n);
      const auto input_host = random_vector<T>(n);
      const auto before = random_vector<T>(out_size);
      auto want = before;
      for (std::size_t i = 0; i < n; ++i) want[static_cast<std::size_t>(targets[i])] = input_host[i];

      mg::distributed_vector<T> input(input_host, s.group);
      {
        mg::distributed_vector<long long> map(targets, s.group);
        mg::distributed_vector<T> output(before, s.group);
        mg::scatter(input, map, output);
        EXPECT_TRUE(same_elements(mg::to_vector(output), want));
      }
      {
        mg::distributed_vector<long long> map(s.group, skewed_layout(n, k));
        mg::detail::vector_access::upload(map, 0, targets.data(), n);
        mg::distributed_vector<T> output(s.group, skewed_layout(out_size, k));
        mg::detail::vector_access::upload(output, 0, before.data(), out_size);
        mg::scatter(input, map, output);
        EXPECT_TRUE(same_elements(mg::to_vector(output), want));
      }
      {
        mg::distributed_vector<T> output(before, s.group);
        mg::scatter(input, targets, output);
        EXPECT_TRUE(same_elements(mg::to_vector(output), want));
      }
    }
}

TEST(GatherIndexTypes, UnsignedSixtyFourBitMapsAndPermutationsRoundTrip) {
  for (const auto& s : exchange_shapes()) {
    SCOPED_TRACE(s.name);
    const std::size_t n = 100003;
    std::vector<std::size_t> perm(n);
    std::iota(perm.begin(), perm.end(), std::size_t{0});
    std::shuffle(perm.begin(), perm.end(), rng());
    const auto host = random_vector<float>(n);
    mg::distributed_vector<float> input(host, s.group), gathered(n, s.group), back(n, s.group);
    mg::distributed_vector<std::size_t> map(perm, s.group);
    mg::gather(map, input, gathered);
    mg::scatter(gathered, map, back);  // back[perm[i]] = input[perm[i]]
    const auto g = mg::to_vector(gathered);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(g[i], host[perm[i]]) << "element " << i;
    EXPECT_TRUE(same_elements(mg::to_vector(back), host));
  }
}

// ---- errors ---------------------------------------------------------------------------------

TEST(GatherErrors, OutOfRangeIndicesNameTheFirstBadPositionAndWriteNothing) {
  for (const auto& s : exchange_shapes()) {
    SCOPED_TRACE(s.name);
    const std::size_t n = 1000;
    const auto input_host = random_vector<int>(n);
    mg::distributed_vector<int> input(input_host, s.group);
    auto map_host = random_map<int>(n, n);
    map_host[700] = static_cast<int>(n);  // one past the end
    map_host[613] = -4;                   // negative: the first bad one
    map_host[950] = 1 << 30;
    const std::vector<int> before(n, 5);
    mg::distributed_vector<int> output(before, s.group);
    mg::distributed_vector<int> map(map_host, s.group);
    for (int route = 0; route < 3; ++route) {
      SCOPED_TRACE(route);
      try {
        if (route == 0) mg::gather(map, input, output);
        if (route == 1) mg::gather(map_host, input, output);
        if (route == 2) mg::scatter(input, map, output);
        ADD_FAILURE() << "no exception";
      } catch (const std::out_of_range& e) {
        EXPECT_NE(std::string(e.what()).find("map[613] = -4"), std::string::npos) << e.what();
      }
      EXPECT_TRUE(same_elements(mg::to_vector(output), before));
    }
    // Unsigned indices past the end.
    std::vector<unsigned> umap(n, 3u);
    umap[999] = static_cast<unsigned>(n);
    try {
      mg::gather(umap, input, output);
      ADD_FAILURE() << "no exception";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("map[999] = 1000"), std::string::npos) << e.what();
    }
  }
}

TEST(GatherErrors, LengthsGroupsAndAliasing) {
  const auto& s = exchange_shapes()[1];
  mg::distributed_vector<int> input(10, s.group), output(10, s.group), longer(11, s.group);
  mg::distributed_vector<int> elsewhere(10, mg::device_group({0, 0, 0}));
  mg::distributed_vector<int> map(10, 0, s.group);
  try {
    mg::gather(map, input, longer);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("10 indices"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("11 elements"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mg::scatter(longer, map, output), std::invalid_argument);
  EXPECT_THROW(mg::gather(map, input, elsewhere), std::invalid_argument);
  EXPECT_THROW(mg::scatter(input, map, elsewhere), std::invalid_argument);
  EXPECT_THROW(mg::gather(map, input, input), std::invalid_argument);
  EXPECT_THROW(mg::gather(std::vector<int>(9, 0), input, output), std::invalid_argument);
}

// scatter(x, idx, idx): the map as the output would be overwritten while other threads still
// read it (on one slot, one kernel does both). Refused on every group shape, naming the map,
// with nothing written.
TEST(GatherErrors, ScatterIntoItsOwnMapIsRefusedAndWritesNothing) {
  for (const auto& s : exchange_shapes()) {
    SCOPED_TRACE(s.name);
    std::vector<int> reversed(1000);
    for (int i = 0; i < 1000; ++i) reversed[i] = 999 - i;
    mg::distributed_vector<int> values(reversed, s.group), map(reversed, s.group);
    try {
      mg::scatter(values, map, map);
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("must not be the map"), std::string::npos) << e.what();
    }
    EXPECT_EQ(mg::to_vector(map), reversed);
    // Map and input may be the same vector: both are only read.
    mg::distributed_vector<int> out(1000, 0, s.group);
    mg::scatter(map, map, out);
    std::vector<int> want(1000);
    for (int i = 0; i < 1000; ++i) want[reversed[i]] = reversed[i];
    EXPECT_EQ(mg::to_vector(out), want);
  }
}

}  // namespace
