// inclusive_scan_by_key against a sequential host reference: runs of several lengths (ones,
// threes, a third of the vector, which crosses slots, one run over everything), integer and
// floating-point sums, a non-commutative operator (function composition, in order), outputs
// on another group, in place, subranges and views, and bad input (nothing written).
#include <multigpu/multigpu.hpp>

#include "by_key_support.hpp"

#include <ranges>
#include <stdexcept>
#include <vector>

namespace {

using namespace test;

template <class V, class Op>
std::vector<V> reference(const std::vector<int>& keys, const std::vector<V>& values, Op op) {
  std::vector<V> out(values.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    out[i] = i > 0 && keys[i] == keys[i - 1] ? op(out[i - 1], values[i]) : values[i];
  return out;
}

template <class V, class Op>
void check(const shape& s, std::size_t n, std::size_t length, Op op) {
  SCOPED_TRACE(testing::Message() << s.name << " n=" << n << " run length " << length);
  const std::vector<int> keys = run_keys(n, length);
  const std::vector<V> values = values_at<V>(n);
  const std::vector<V> want = reference(keys, values, op);
  mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group);
  mg::distributed_vector<V> v(values.begin(), values.end(), s.group);
  // Into a vector on another group from index 1, then in place.
  const mg::device_group other = s.group.size() == 1 ? s.group : mg::device_group({0, 0});
  mg::distributed_vector<V> out(n + 1, value_at<V>(999), other);
  auto end = mg::inclusive_scan_by_key(k.cbegin(), k.cend(), v.cbegin(), out.begin() + 1, cuda::std::equal_to<>{}, op);
  EXPECT_EQ(end - out.begin(), static_cast<std::ptrdiff_t>(n + 1));
  const std::vector<V> got = mg::to_vector(out);
  EXPECT_TRUE(same_elements(std::vector<V>(got.begin() + 1, got.end()), want)) << "into another vector";
  EXPECT_TRUE(same_elements(std::vector<V>(got.begin(), got.begin() + 1), std::vector<V>{value_at<V>(999)}));
  mg::inclusive_scan_by_key(k, v, v, cuda::std::equal_to<>{}, op);
  EXPECT_TRUE(same_elements(mg::to_vector(v), want)) << "in place";
}

}  // namespace

TEST(InclusiveScanByKey, SumsOfIntegersAndFloats) {
  for (const auto& s : exchange_shapes())
    for (std::size_t n : sizes(s.group.size()))
      for (std::size_t length : {std::size_t{0}, std::size_t{3}, n / 3 + 1, std::size_t{1000000000}}) {
        if (n > 2000000 && length != 3) continue;
        check<long long>(s, n, length, cuda::std::plus<>{});
        check<float>(s, n, length, cuda::std::plus<>{});
      }
}

// Runs over a third of the vector and over every middle segment, with composition: the carry
// crosses several slots in order.
TEST(InclusiveScanByKey, RunsAcrossSegmentsCarryInOrder) {
  for (const auto& s : exchange_shapes())
    for (std::size_t n : {s.group.size() + 2, std::size_t{4099}, std::size_t{1000003}}) {
      check<affine>(s, n, n / 3 + 1, compose{});
      check<double>(s, n, 7, cuda::std::plus<>{});
      SCOPED_TRACE("one run over the middle");
      std::vector<int> keys(n, 7);
      keys.front() = 1;
      keys.back() = 2;
      const std::vector<affine> values = values_at<affine>(n);
      mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group);
      mg::distributed_vector<affine> v(values.begin(), values.end(), s.group), out(n, s.group);
      mg::inclusive_scan_by_key(k, v, out, cuda::std::equal_to<>{}, compose{});
      EXPECT_EQ(mg::to_vector(out), reference(keys, values, compose{}));
    }
}

TEST(InclusiveScanByKey, Subrange) {
  for (const auto& s : exchange_shapes()) {
    SCOPED_TRACE(s.name);
    const std::size_t n = 1009;
    const std::vector<int> keys = run_keys(n, 5);
    const std::vector<long long> values = values_at<long long>(n);
    mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group);
    mg::distributed_vector<long long> v(values.begin(), values.end(), s.group);
    // [12, n - 7) in place: the first run starts at 12, mid-run.
    mg::inclusive_scan_by_key(k.begin() + 12, k.end() - 7, v.begin() + 12, v.begin() + 12);
    std::vector<long long> want(values);
    const auto part = reference(std::vector<int>(keys.begin() + 12, keys.end() - 7),
                                std::vector<long long>(values.begin() + 12, values.end() - 7), cuda::std::plus<>{});
    std::copy(part.begin(), part.end(), want.begin() + 12);
    EXPECT_EQ(mg::to_vector(v), want);
  }
}

// The keys as a view in place of [keys_first, keys_last): a subrange that starts mid-run, and
// std::views::take, into a vector on another group.
TEST(InclusiveScanByKey, KeysAsAView) {
  const mg::device_group other({0, 0});
  for (const auto& s : exchange_shapes())
    for (std::size_t n : {std::size_t{9}, std::size_t{1009}, std::size_t{100003}}) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const std::vector<int> keys = run_keys(n, 5);
      const std::vector<affine> values = values_at<affine>(n);
      const mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group);
      const mg::distributed_vector<affine> v(values.begin(), values.end(), s.group);
      const std::size_t a = 3, b = n - 2;
      mg::distributed_vector<affine> out(n, other);
      auto end = mg::inclusive_scan_by_key(std::ranges::subrange(k.begin() + a, k.begin() + b), v.begin() + a,
                                           out.begin(), cuda::std::equal_to<>{}, compose{});
      EXPECT_EQ(end - out.begin(), static_cast<std::ptrdiff_t>(b - a));
      std::vector<affine> want = reference(std::vector<int>(keys.begin() + a, keys.begin() + b),
                                           std::vector<affine>(values.begin() + a, values.begin() + b), compose{});
      want.resize(n);  // the rest keeps its value-initialised elements
      EXPECT_TRUE(same_elements(mg::to_vector(out), want)) << "subrange";

      mg::distributed_vector<affine> out2(n, other);
      mg::inclusive_scan_by_key(std::views::take(k, static_cast<std::ptrdiff_t>(b)), v.begin(), out2.begin(),
                                cuda::std::equal_to<>{}, compose{});
      std::vector<affine> want2 = reference(std::vector<int>(keys.begin(), keys.begin() + b),
                                            std::vector<affine>(values.begin(), values.begin() + b), compose{});
      want2.resize(n);
      EXPECT_TRUE(same_elements(mg::to_vector(out2), want2)) << "views::take";
    }
}

// As thrust allows: the keys themselves as the output, and the values shifted by one.
TEST(InclusiveScanByKey, OutputMayBeTheKeysOrOverlapTheValues) {
  for (const auto& s : exchange_shapes()) {
    SCOPED_TRACE(s.name);
    const std::vector<int> keys{1, 1, 1, 1, 2, 2, 3, 3, 3};
    mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group);
    mg::inclusive_scan_by_key(k, k, k);
    EXPECT_EQ(mg::to_vector(k), reference(keys, keys, cuda::std::plus<>{}));
    mg::distributed_vector<int> k2(keys.begin(), keys.end(), s.group), v(keys.size() + 1, 1, s.group);
    mg::inclusive_scan_by_key(k2.begin(), k2.end(), v.begin(), v.begin() + 1);
    std::vector<int> want{1};
    const auto scanned = reference(keys, std::vector<int>(keys.size(), 1), cuda::std::plus<>{});
    want.insert(want.end(), scanned.begin(), scanned.end());
    EXPECT_EQ(mg::to_vector(v), want);
  }
}

TEST(InclusiveScanByKeyErrors, TooFewValuesOrTooShortAnOutputWriteNothing) {
  const mg::device_group g({0, 0});
  mg::distributed_vector<int> keys(100, 1, g);
  mg::distributed_vector<float> short_values(50, 1.0f, g), values(100, 1.0f, g), short_out(60, -1.0f, g);
  EXPECT_THROW(mg::inclusive_scan_by_key(keys, short_values, short_values), std::invalid_argument);
  EXPECT_EQ(mg::to_vector(short_values), std::vector<float>(50, 1.0f));
  EXPECT_THROW(mg::inclusive_scan_by_key(keys, values, short_out), std::invalid_argument);
  EXPECT_EQ(mg::to_vector(short_out), std::vector<float>(60, -1.0f));
  mg::distributed_vector<int> no_keys(0, g);
  mg::inclusive_scan_by_key(no_keys, short_values, short_values);  // nothing to do
  EXPECT_EQ(mg::to_vector(short_values), std::vector<float>(50, 1.0f));
}

TEST(InclusiveScanByKeyErrors, AViewOfKeysChecksAsTheIteratorsDo) {
  const mg::device_group g({0, 0});
  mg::distributed_vector<int> keys(100, 1, g);
  mg::distributed_vector<float> values(100, 1.0f, g), out(100, -1.0f, g);
  const auto last_60 = std::ranges::subrange(keys.begin() + 40, keys.end());
  EXPECT_THROW(mg::inclusive_scan_by_key(last_60, values.begin() + 50, out.begin()), std::invalid_argument)
      << "room for 50 values of 60";
  EXPECT_THROW(mg::inclusive_scan_by_key(last_60, values.begin(), out.begin() + 41), std::invalid_argument)
      << "room for 59 outputs of 60";
  EXPECT_EQ(mg::to_vector(out), std::vector<float>(100, -1.0f)) << "nothing written";
}
