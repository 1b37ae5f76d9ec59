// reduce_by_key against a sequential host reference: runs of several lengths (ones, threes,
// one run over everything, runs of a third of the vector that cross slots, a run that covers
// whole middle segments), integer and floating-point sums, a non-commutative operator
// (function composition, in order), outputs on another group and at an offset, subranges and
// views, and bad input (nothing written), the value-count rule of both whole-vector forms
// included.
#include <multigpu/multigpu.hpp>
#include <multigpu/algorithm/reduce_by_key.hpp>

#include "by_key_support.hpp"

#include <ranges>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace test;

/// The sequential reference: each run's key and the fold of its values, in order.
template <class V, class Op>
std::pair<std::vector<int>, std::vector<V>> reference(const std::vector<int>& keys, const std::vector<V>& values, Op op) {
  std::pair<std::vector<int>, std::vector<V>> out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i > 0 && keys[i] == keys[i - 1]) {
      out.second.back() = op(out.second.back(), values[i]);
    } else {
      out.first.push_back(keys[i]);
      out.second.push_back(values[i]);
    }
  }
  return out;
}

template <class V, class Op>
void check(const shape& s, std::size_t n, std::size_t length, Op op) {
  SCOPED_TRACE(testing::Message() << s.name << " n=" << n << " run length " << length);
  const std::vector<int> keys = run_keys(n, length);
  const std::vector<V> values = values_at<V>(n);
  const auto want = reference(keys, values, op);

  mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group);
  mg::distributed_vector<V> v(values.begin(), values.end(), s.group);
  // Outputs from index 2, the values' on another group.
  const mg::device_group other = s.group.size() == 1 ? s.group : mg::device_group({0, 0});
  mg::distributed_vector<int> keys_out(n + 2, -1, s.group);
  mg::distributed_vector<V> values_out(n + 2, value_at<V>(999), other);
  auto [keys_end, values_end] = mg::reduce_by_key(k.cbegin(), k.cend(), v.cbegin(), keys_out.begin() + 2,
                                                  values_out.begin() + 2, cuda::std::equal_to<>{}, op);
  ASSERT_EQ(keys_end - keys_out.begin(), static_cast<std::ptrdiff_t>(2 + want.first.size()));
  ASSERT_EQ(values_end - values_out.begin(), static_cast<std::ptrdiff_t>(2 + want.first.size()));
  const std::vector<int> got_keys = mg::to_vector(keys_out);
  const std::vector<V> got_values = mg::to_vector(values_out);
  EXPECT_EQ(std::vector<int>(got_keys.begin() + 2, got_keys.begin() + 2 + want.first.size()), want.first);
  EXPECT_TRUE(same_elements(std::vector<V>(got_values.begin() + 2, got_values.begin() + 2 + want.second.size()),
                            want.second));
  EXPECT_EQ(got_keys[0], -1);
  EXPECT_EQ(got_keys[1], -1);
}

const std::size_t run_lengths[] = {0, 1, 3, 1000000000};

}  // namespace

TEST(ReduceByKey, SumsOfIntegersAndFloats) {
  for (const auto& s : exchange_shapes())
    for (std::size_t n : sizes(s.group.size()))
      for (std::size_t length : run_lengths) {
        if (n > 2000000 && length != 3) continue;
        check<long long>(s, n, length, cuda::std::plus<>{});
        check<float>(s, n, length, cuda::std::plus<>{});
      }
}

// Runs that cross slots: a third of the vector each, and one that covers every middle segment
// (first and last elements differ, everything else one key).
TEST(ReduceByKey, RunsAcrossSegmentsJoinInOrder) {
  for (const auto& s : exchange_shapes())
    for (std::size_t n : {s.group.size() + 2, std::size_t{4099}, std::size_t{1000003}}) {
      check<affine>(s, n, n / 3 + 1, compose{});
      check<double>(s, n, n / 3 + 1, cuda::std::plus<>{});
      SCOPED_TRACE("one run over the middle");
      std::vector<int> keys(n, 7);
      keys.front() = 1;
      keys.back() = 2;
      const std::vector<affine> values = values_at<affine>(n);
      const auto want = reference(keys, values, compose{});
      mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group), keys_out(n, 0, s.group);
      mg::distributed_vector<affine> v(values.begin(), values.end(), s.group), values_out(n, s.group);
      auto ends = mg::reduce_by_key(k, v, keys_out, values_out, cuda::std::equal_to<>{}, compose{});
      ASSERT_EQ(ends.first - keys_out.begin(), 3);
      const auto got_keys = mg::to_vector(keys_out);
      EXPECT_EQ(std::vector<int>(got_keys.begin(), got_keys.begin() + 3), want.first);
      const auto got = mg::to_vector(values_out);
      EXPECT_EQ(std::vector<affine>(got.begin(), got.begin() + 3), want.second);
    }
}

// The layout-keeping form: every run on the slot where it starts (one count per slot of the
// keys that differ from the key before them), joined across slots in order.
TEST(ReduceByKey, LayoutKeepingFormKeepsEachRunWhereItStarts) {
  for (const auto& s : exchange_shapes())
    for (std::size_t n : {std::size_t{1}, s.group.size() + 2, std::size_t{4099}, std::size_t{1000003}})
      for (std::size_t length : {std::size_t{1}, std::size_t{3}, n / 3 + 1}) {
        SCOPED_TRACE(testing::Message() << s.name << " n=" << n << " run length " << length);
        const std::vector<int> keys = run_keys(n, length);
        const std::vector<affine> values = values_at<affine>(n);
        const auto want = reference(keys, values, compose{});
        mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group);
        mg::distributed_vector<affine> v(values.begin(), values.end(), s.group);
        auto [got_keys, got_values] = mg::reduce_by_key(k, v, cuda::std::equal_to<>{}, compose{});
        EXPECT_EQ(mg::to_vector(got_keys), want.first);
        EXPECT_EQ(mg::to_vector(got_values), want.second);
        ASSERT_EQ(got_keys.segment_count(), k.segment_count());
        for (std::size_t slot = 0; slot < k.segment_count(); ++slot) {
          const std::size_t first = k.layout().segment_offset(slot), size = k.layout().segment_size(slot);
          std::size_t starts = 0;
          for (std::size_t i = first; i < first + size; ++i) starts += i == 0 || keys[i] != keys[i - 1];
          EXPECT_EQ(got_keys.layout().segment_size(slot), starts) << "slot " << slot;
          EXPECT_EQ(got_values.layout().segment_size(slot), starts) << "slot " << slot;
        }
      }
  const mg::device_group g({0, 0});
  mg::distributed_vector<int> empty(0, g), keys(10, 1, g);
  mg::distributed_vector<float> no_values(0, g), few(5, 1.0f, g);
  EXPECT_EQ(mg::reduce_by_key(empty, no_values).first.size(), 0u);
  EXPECT_THROW(mg::reduce_by_key(keys, few), std::invalid_argument);
}

TEST(ReduceByKey, SubrangeInPlace) {
  for (const auto& s : exchange_shapes()) {
    SCOPED_TRACE(s.name);
    const std::size_t n = 1009;
    const std::vector<int> keys = run_keys(n, 4);
    const std::vector<long long> values = values_at<long long>(n);
    const std::vector<int> sub_keys(keys.begin() + 10, keys.end() - 7);
    const std::vector<long long> sub_values(values.begin() + 10, values.end() - 7);
    const auto want = reference(sub_keys, sub_values, cuda::std::plus<>{});
    mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group);
    mg::distributed_vector<long long> v(values.begin(), values.end(), s.group);
    // Into the inputs themselves, from index 0: every input is read before any output is written.
    auto ends = mg::reduce_by_key(k.begin() + 10, k.end() - 7, v.begin() + 10, k.begin(), v.begin());
    ASSERT_EQ(ends.first - k.begin(), static_cast<std::ptrdiff_t>(want.first.size()));
    const auto got_keys = mg::to_vector(k);
    const auto got_values = mg::to_vector(v);
    EXPECT_EQ(std::vector<int>(got_keys.begin(), got_keys.begin() + want.first.size()), want.first);
    EXPECT_EQ(std::vector<long long>(got_values.begin(), got_values.begin() + want.second.size()), want.second);
  }
}

// The keys as a view in place of [keys_first, keys_last): a subrange that starts and ends
// mid-run and mid-segment, and std::views::take, into outputs on another group.
TEST(ReduceByKey, KeysAsAView) {
  const mg::device_group other({0, 0});
  for (const auto& s : exchange_shapes())
    for (std::size_t n : {std::size_t{9}, std::size_t{1009}, std::size_t{100003}}) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const std::vector<int> keys = run_keys(n, 4);
      const std::vector<affine> values = values_at<affine>(n);
      const mg::distributed_vector<int> k(keys.begin(), keys.end(), s.group);
      const mg::distributed_vector<affine> v(values.begin(), values.end(), s.group);
      const std::size_t a = 2, b = n - 3;
      const auto want = reference(std::vector<int>(keys.begin() + a, keys.begin() + b),
                                  std::vector<affine>(values.begin() + a, values.begin() + b), compose{});
      mg::distributed_vector<int> keys_out(n, -1, other);
      mg::distributed_vector<affine> values_out(n, other);
      auto [keys_end, values_end] =
          mg::reduce_by_key(std::ranges::subrange(k.begin() + a, k.begin() + b), v.begin() + a, keys_out.begin(),
                            values_out.begin(), cuda::std::equal_to<>{}, compose{});
      ASSERT_EQ(keys_end - keys_out.begin(), static_cast<std::ptrdiff_t>(want.first.size()));
      ASSERT_EQ(values_end - values_out.begin(), static_cast<std::ptrdiff_t>(want.first.size()));
      auto got_keys = mg::to_vector(keys_out);
      auto got_values = mg::to_vector(values_out);
      got_keys.resize(want.first.size());
      got_values.resize(want.second.size());
      EXPECT_EQ(got_keys, want.first);
      EXPECT_EQ(got_values, want.second);

      const auto prefix = reference(std::vector<int>(keys.begin(), keys.begin() + b),
                                    std::vector<affine>(values.begin(), values.begin() + b), compose{});
      auto ends = mg::reduce_by_key(std::views::take(k, static_cast<std::ptrdiff_t>(b)), v.begin(), keys_out.begin(),
                                    values_out.begin(), cuda::std::equal_to<>{}, compose{});
      ASSERT_EQ(ends.first - keys_out.begin(), static_cast<std::ptrdiff_t>(prefix.first.size()));
      got_keys = mg::to_vector(keys_out);
      got_values = mg::to_vector(values_out);
      got_keys.resize(prefix.first.size());
      got_values.resize(prefix.second.size());
      EXPECT_EQ(got_keys, prefix.first);
      EXPECT_EQ(got_values, prefix.second);
    }
}

// Both whole-vector forms take one value per key: more values are refused as fewer are,
// naming both counts, with nothing written. The iterator form reads as many values as there
// are keys from values_first, so a longer vector of values is fine there.
TEST(ReduceByKeyErrors, BothWholeVectorFormsTakeOneValuePerKey) {
  const mg::device_group g({0, 0, 0});
  const std::vector<int> keys = run_keys(100, 3);  // 34 runs
  const std::vector<long long> values = values_at<long long>(101);
  mg::distributed_vector<int> k(keys.begin(), keys.end(), g);
  mg::distributed_vector<long long> more(values.begin(), values.end(), g), fewer(values.begin(), values.end() - 2, g);
  mg::distributed_vector<int> keys_out(100, -1, g);
  mg::distributed_vector<long long> values_out(100, -1, g);
  auto refused = [&](const char* name, auto call, const char* counts) {
    expect_invalid_argument(name, call, counts);
    SCOPED_TRACE(name);
    EXPECT_EQ(mg::to_vector(keys_out), std::vector<int>(100, -1)) << "nothing written";
    EXPECT_EQ(mg::to_vector(values_out), std::vector<long long>(100, -1)) << "nothing written";
  };
  refused("into outputs, more values", [&] { (void)mg::reduce_by_key(k, more, keys_out, values_out); },
          "100 keys but 101 values");
  refused("into outputs, fewer values", [&] { (void)mg::reduce_by_key(k, fewer, keys_out, values_out); },
          "100 keys but 99 values");
  refused("layout kept, more values", [&] { (void)mg::reduce_by_key(k, more); }, "100 keys but 101 values");
  refused("layout kept, fewer values", [&] { (void)mg::reduce_by_key(k, fewer); }, "100 keys but 99 values");

  const auto want = reference(keys, std::vector<long long>(values.begin(), values.end() - 1), cuda::std::plus<>{});
  auto ends = mg::reduce_by_key(k.cbegin(), k.cend(), more.cbegin(), keys_out.begin(), values_out.begin());
  ASSERT_EQ(ends.first - keys_out.begin(), static_cast<std::ptrdiff_t>(want.first.size()));
  auto got = mg::to_vector(values_out);
  got.resize(want.second.size());
  EXPECT_EQ(got, want.second) << "the iterator form reads the first 100 of 101 values";
}

TEST(ReduceByKeyErrors, TooFewValuesOrTooLittleRoomWriteNothing) {
  const mg::device_group g({0, 0});
  mg::distributed_vector<int> keys(100, g);
  mg::iota(keys, 0);  // 100 runs
  mg::distributed_vector<float> values(100, 1.0f, g), short_values(50, 1.0f, g);
  mg::distributed_vector<int> keys_out(100, -1, g), small_keys(10, -1, g);
  mg::distributed_vector<float> values_out(100, -1.0f, g);
  EXPECT_THROW(mg::reduce_by_key(keys, short_values, keys_out, values_out), std::invalid_argument);
  try {
    mg::reduce_by_key(keys, values, small_keys, values_out);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("100 keys form 100 runs, but the key output has room for 10"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(mg::to_vector(small_keys), std::vector<int>(10, -1));
  EXPECT_EQ(mg::to_vector(values_out), std::vector<float>(100, -1.0f));
  EXPECT_EQ(mg::to_vector(keys_out), std::vector<int>(100, -1));
}

TEST(ReduceByKeyErrors, AViewOfKeysChecksAsTheIteratorsDo) {
  const mg::device_group g({0, 0});
  mg::distributed_vector<int> keys(100, g);
  mg::iota(keys, 0);  // 100 runs
  mg::distributed_vector<float> values(100, 1.0f, g);
  mg::distributed_vector<int> keys_out(100, -1, g), small_keys(10, -1, g);
  mg::distributed_vector<float> values_out(100, -1.0f, g);
  const auto last_60 = std::ranges::subrange(keys.begin() + 40, keys.end());
  // Values from index 50: room for 50 of the 60.
  EXPECT_THROW(mg::reduce_by_key(last_60, values.begin() + 50, keys_out.begin(), values_out.begin()),
               std::invalid_argument);
  try {
    mg::reduce_by_key(last_60, values.begin(), small_keys.begin(), values_out.begin());
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("60 keys form 60 runs, but the key output has room for 10"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(mg::to_vector(small_keys), std::vector<int>(10, -1));
  EXPECT_EQ(mg::to_vector(keys_out), std::vector<int>(100, -1));
  EXPECT_EQ(mg::to_vector(values_out), std::vector<float>(100, -1.0f));
}
