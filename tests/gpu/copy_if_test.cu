// copy_if, remove_copy_if and remove_if against std::copy_if, std::remove_copy_if and
// std::remove_if on the host: both forms (the layout kept per slot, and the STL form into a given
// output), the per-slot layout of the first, rebalance after a filter, predicates that keep
// nothing, everything, one segment or only the last element, outputs on another group, views,
// capacity, and bad input (nothing written). Every size-changing form taking a view is here too.
#include <multigpu/multigpu.hpp>

#include "select_support.hpp"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <ranges>
#include <stdexcept>
#include <string>

namespace {

using namespace test;
using namespace test::selection;

template <class T>
class CopyIf : public ::testing::Test {};
TYPED_TEST_SUITE(CopyIf, select_types);

TYPED_TEST(CopyIf, LayoutKeepingFormKeepsEachSlotsSurvivorsInOrder) {
  using T = TypeParam;
  for_each_select_case<T>(
      std::is_same_v<T, int> || std::is_same_v<T, vec3>,
      [&](const shape& s, std::size_t n, mg::distributed_vector<T>& v, const std::vector<T>& host,
          const above<T>& pred) {
        std::vector<T> want;
        std::copy_if(host.begin(), host.end(), std::back_inserter(want), pred);
        mg::distributed_vector<T> kept = mg::copy_if(v, pred);
        EXPECT_TRUE(kept.group() == s.group);
        EXPECT_EQ(kept.layout(), mg::distribution::from_sizes(survivors_per_slot(host, v.layout(), pred)));
        EXPECT_TRUE(same_elements(mg::to_vector(kept), want));

        std::vector<T> rest;
        std::remove_copy_if(host.begin(), host.end(), std::back_inserter(rest), pred);
        mg::distributed_vector<T> removed = mg::remove_copy_if(v, pred);
        EXPECT_EQ(removed.layout(),
                  mg::distribution::from_sizes(survivors_per_slot(host, v.layout(), [&](const T& x) { return !pred(x); })));
        EXPECT_TRUE(same_elements(mg::to_vector(removed), rest));
        EXPECT_TRUE(same_elements(mg::to_vector(v), host)) << "the input is unchanged";

        // The result holds the storage it was selected into until shrink_to_fit.
        EXPECT_GE(kept.capacity(), kept.size());
        EXPECT_LE(kept.capacity(), n);
        const mg::distribution kept_layout = kept.layout();
        kept.shrink_to_fit();
        EXPECT_EQ(kept.capacity(), kept.size());
        EXPECT_EQ(kept.layout(), kept_layout);
        EXPECT_TRUE(same_elements(mg::to_vector(kept), want)) << "after shrink_to_fit";

        // A filter that leaves one slot with most of the data, then even blocks again.
        mg::rebalance(kept);
        EXPECT_EQ(kept.layout(), mg::distribution::block(want.size(), s.group.size()));
        EXPECT_TRUE(same_elements(mg::to_vector(kept), want)) << "after rebalance";
      });
}

TYPED_TEST(CopyIf, StlFormWritesTheSurvivorsDenselyFromTheOutput) {
  using T = TypeParam;
  const T sentinel = with_key<T>(-7777);
  for_each_select_case<T>(
      std::is_same_v<T, float>,
      [&](const shape& s, std::size_t n, mg::distributed_vector<T>& v, const std::vector<T>& host,
          const above<T>& pred) {
        std::vector<T> want;
        std::copy_if(host.begin(), host.end(), std::back_inserter(want), pred);

        // Into a vector of another layout (and, for the repeated shapes, another group), from
        // index 3: the survivors cross slots.
        const mg::device_group other = s.group.size() == 1 ? s.group : mg::device_group({0, 0});
        mg::distributed_vector<T> out(n + 5, sentinel, other);
        auto end = mg::copy_if(v.begin(), v.end(), out.begin() + 3, pred);
        EXPECT_EQ(end - out.begin(), static_cast<std::ptrdiff_t>(3 + want.size()));
        std::vector<T> expect(n + 5, sentinel);
        std::copy(want.begin(), want.end(), expect.begin() + 3);
        EXPECT_TRUE(same_elements(mg::to_vector(out), expect)) << "copy_if";

        std::vector<T> rest;
        std::remove_copy_if(host.begin(), host.end(), std::back_inserter(rest), pred);
        mg::distributed_vector<T> out2(n, sentinel, s.group);
        auto end2 = mg::remove_copy_if(v.cbegin(), v.cend(), out2.begin(), pred);
        EXPECT_EQ(end2 - out2.begin(), static_cast<std::ptrdiff_t>(rest.size()));
        std::vector<T> expect2(n, sentinel);
        std::copy(rest.begin(), rest.end(), expect2.begin());
        EXPECT_TRUE(same_elements(mg::to_vector(out2), expect2)) << "remove_copy_if";

        // In place, then trimmed: std::remove_if and erase.
        auto new_end = mg::remove_if(v, pred);
        ASSERT_EQ(new_end - v.begin(), static_cast<std::ptrdiff_t>(rest.size()));
        v.resize(rest.size());
        EXPECT_TRUE(same_elements(mg::to_vector(v), rest)) << "remove_if, then resize";
      });
}

TYPED_TEST(CopyIf, SubrangesAndOverlappingOutputs) {
  using T = TypeParam;
  for (const auto& s : exchange_shapes()) {
    const std::size_t n = 1009;
    SCOPED_TRACE(s.name);
    mg::distributed_vector<T> v(n, s.group);
    const auto host = input<T>(n, v.layout(), marked::none);
    mg::copy(host.begin(), host.end(), v.begin());
    const above<T> pred{0};
    // A subrange, layout kept: the survivors of [10, n - 20), each slot keeping its own.
    std::vector<T> want;
    std::copy_if(host.begin() + 10, host.end() - 20, std::back_inserter(want), pred);
    EXPECT_TRUE(same_elements(mg::to_vector(mg::copy_if(v.begin() + 10, v.end() - 20, pred)), want));
    // The STL form into the input itself, shifted right by 5: every element is read first.
    auto end = mg::copy_if(v.begin() + 10, v.end() - 20, v.begin() + 15, pred);
    std::vector<T> expect(host);
    std::copy(want.begin(), want.end(), expect.begin() + 15);
    EXPECT_EQ(end - v.begin(), static_cast<std::ptrdiff_t>(15 + want.size()));
    EXPECT_TRUE(same_elements(mg::to_vector(v), expect));
  }
}

// Every form takes a view in place of [first, last) (docs/api.md#iterators): subranges that
// start and end mid-segment, std::views::take of a const and of a non-const vector, against
// std:: on the same part of the host copy. == is an equivalence, so std::unique_copy, which
// compares with the element it kept, agrees with the neighbour comparison here.
TEST(SelectViews, EveryFormTakesAView) {
  const int sentinel = -7777;
  const mg::device_group other({0});
  for (const auto& s : exchange_shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const std::size_t a = n / 5, b = n - n / 7;
      std::vector<int> host(n);  // runs of three of 23 values in [-11, 11]
      for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<int>((i / 3 * 7919) % 23) - 11;
      const mg::distributed_vector<int> v(host, s.group);
      const auto sub = std::ranges::subrange(v.begin() + a, v.begin() + b);
      const above<int> pred{0};
      std::vector<int> pass, fail, runs, pass_of_prefix;
      std::copy_if(host.begin() + a, host.begin() + b, std::back_inserter(pass), pred);
      std::remove_copy_if(host.begin() + a, host.begin() + b, std::back_inserter(fail), pred);
      std::unique_copy(host.begin() + a, host.begin() + b, std::back_inserter(runs));
      std::copy_if(host.begin(), host.begin() + b, std::back_inserter(pass_of_prefix), pred);

      // Layout kept.
      EXPECT_TRUE(same_elements(mg::to_vector(mg::copy_if(sub, pred)), pass)) << "copy_if(view, pred)";
      EXPECT_TRUE(same_elements(mg::to_vector(mg::remove_copy_if(sub, pred)), fail)) << "remove_copy_if(view, pred)";
      EXPECT_TRUE(same_elements(mg::to_vector(mg::unique_copy(sub)), runs)) << "unique_copy(view)";
      EXPECT_TRUE(same_elements(mg::to_vector(mg::unique_copy(v.cbegin() + a, v.cbegin() + b)), runs))
          << "unique_copy(first, last)";
      EXPECT_TRUE(same_elements(
          mg::to_vector(mg::copy_if(std::views::take(v, static_cast<std::ptrdiff_t>(b)), pred)), pass_of_prefix))
          << "copy_if(views::take of a const vector, pred)";

      // The STL forms, into vectors on another group from index 1.
      auto written = [&](const mg::distributed_vector<int>& out, const std::vector<int>& want) {
        std::vector<int> expect(out.size(), sentinel);
        std::copy(want.begin(), want.end(), expect.begin() + 1);
        return same_elements(mg::to_vector(out), expect);
      };
      mg::distributed_vector<int> out(n + 1, sentinel, other);
      EXPECT_EQ(mg::copy_if(sub, out.begin() + 1, pred) - out.begin(), static_cast<std::ptrdiff_t>(1 + pass.size()));
      EXPECT_TRUE(written(out, pass)) << "copy_if(view, out, pred)";
      mg::distributed_vector<int> out2(n + 1, sentinel, other);
      EXPECT_EQ(mg::remove_copy_if(sub, out2.begin() + 1, pred) - out2.begin(),
                static_cast<std::ptrdiff_t>(1 + fail.size()));
      EXPECT_TRUE(written(out2, fail)) << "remove_copy_if(view, out, pred)";
      mg::distributed_vector<int> out3(n + 1, sentinel, other);
      EXPECT_EQ(mg::unique_copy(sub, out3.begin() + 1) - out3.begin(), static_cast<std::ptrdiff_t>(1 + runs.size()));
      EXPECT_TRUE(written(out3, runs)) << "unique_copy(view, out)";
      mg::distributed_vector<int> yes(n + 1, sentinel, other), no(n + 1, sentinel, s.group);
      auto [yes_end, no_end] = mg::partition_copy(sub, yes.begin() + 1, no.begin() + 1, pred);
      EXPECT_EQ(yes_end - yes.begin(), static_cast<std::ptrdiff_t>(1 + pass.size()));
      EXPECT_EQ(no_end - no.begin(), static_cast<std::ptrdiff_t>(1 + fail.size()));
      EXPECT_TRUE(written(yes, pass)) << "partition_copy(view, ...), passing";
      EXPECT_TRUE(written(no, fail)) << "partition_copy(view, ...), failing";

      // In place on a view of a vector's non-const iterators: the elements outside the view
      // keep their values; those between the new end and the view's end are unspecified.
      auto in_place = [&](const char* name, auto call, auto reference) {
        SCOPED_TRACE(name);
        mg::distributed_vector<int> w(host, s.group);
        std::vector<int> h(host);
        const std::size_t end = static_cast<std::size_t>(call(w) - w.begin());
        const std::size_t want_end = static_cast<std::size_t>(reference(h) - h.begin());
        ASSERT_EQ(end, want_end);
        std::vector<int> got = mg::to_vector(w);
        std::fill(got.begin() + end, got.begin() + b, 0);
        std::fill(h.begin() + end, h.begin() + b, 0);
        EXPECT_TRUE(same_elements(got, h));
      };
      in_place(
          "remove_if(view, pred)",
          [&](mg::distributed_vector<int>& w) { return mg::remove_if(std::ranges::subrange(w.begin() + a, w.begin() + b), pred); },
          [&](std::vector<int>& h) { return std::remove_if(h.begin() + a, h.begin() + b, pred); });
      in_place(
          "unique(view)", [&](mg::distributed_vector<int>& w) { return mg::unique(std::ranges::subrange(w.begin() + a, w.begin() + b)); },
          [&](std::vector<int>& h) { return std::unique(h.begin() + a, h.begin() + b); });
      // The partitions leave no unspecified elements: the whole vector is compared (the
      // fill above covers [mid, b), which the comparison of the elements before it checks).
      in_place(
          "stable_partition(view, pred)",
          [&](mg::distributed_vector<int>& w) {
            const auto mid = mg::stable_partition(std::ranges::subrange(w.begin() + a, w.begin() + b), pred);
            EXPECT_TRUE(same_elements(mg::to_vector(w), [&] {
              std::vector<int> h(host);
              std::stable_partition(h.begin() + a, h.begin() + b, pred);
              return h;
            }()));
            return mid;
          },
          [&](std::vector<int>& h) { return std::stable_partition(h.begin() + a, h.begin() + b, pred); });
      in_place(
          "partition(views::take, pred)",
          [&](mg::distributed_vector<int>& w) {
            const auto mid = mg::partition(std::views::take(w, static_cast<std::ptrdiff_t>(b)), pred);
            EXPECT_TRUE(same_elements(mg::to_vector(w), [&] {
              std::vector<int> h(host);
              std::stable_partition(h.begin(), h.begin() + b, pred);
              return h;
            }()));
            return mid;
          },
          [&](std::vector<int>& h) { return std::stable_partition(h.begin(), h.begin() + b, pred); });
    }
}

// The view forms check as the iterator forms do: an output without room is
// std::invalid_argument naming the counts, and nothing is written.
TEST(SelectViews, AnOutputWithoutRoomIsRefusedAndNotWritten) {
  const mg::device_group g({0, 0, 0});
  const std::vector<int> host{5, -1, 7, 9, -3, 2, 8, 8, 8};  // seven positive
  mg::distributed_vector<int> v(host, g);
  const auto view = std::ranges::subrange(v.begin() + 1, v.end());  // six positive, six runs
  mg::distributed_vector<int> small(4, -9, mg::device_group({0, 0}));
  auto refused = [&](const char* name, auto call, const char* counts) {
    expect_invalid_argument(name, call, counts);
    SCOPED_TRACE(name);
    EXPECT_EQ(mg::to_vector(small), std::vector<int>(4, -9)) << "nothing written";
    EXPECT_EQ(mg::to_vector(v), host) << "the input is untouched";
  };
  refused("copy_if", [&] { (void)mg::copy_if(view, small.begin(), above<int>{0}); }, "6 of the 8");
  refused("remove_copy_if", [&] { (void)mg::remove_copy_if(view, small.begin() + 2, above<int>{100}); },
          "8 of the 8");
  refused("unique_copy", [&] { (void)mg::unique_copy(view, small.begin()); }, "6 of the 8");
  mg::distributed_vector<int> room(8, -9, g);
  refused("partition_copy", [&] { (void)mg::partition_copy(view, room.begin(), small.begin() + 3, above<int>{0}); },
          "2 of the 8 elements go to the output of those that fail");
  EXPECT_EQ(mg::to_vector(room), std::vector<int>(8, -9)) << "neither output written";
}

TEST(SelectCapacity, KeptUntilShrinkToFitAndOnlyThere) {
  mg::device_group g({0, 0, 0});
  // Vectors made any other way hold exactly their elements, halo or not.
  mg::distributed_vector<int> plain(1001, g), haloed(1001, mg::halo{3}, g);
  EXPECT_EQ(plain.capacity(), 1001u);
  EXPECT_EQ(haloed.capacity(), 1001u);
  const int* before = plain.segment(1).data();
  plain.shrink_to_fit();
  EXPECT_EQ(plain.segment(1).data(), before) << "nothing to give back: no reallocation";

  mg::iota(plain, 0);
  mg::distributed_vector<int> kept = mg::copy_if(plain, above<int>{989.5});  // 11 survivors, all on slot 2
  EXPECT_EQ(kept.size(), 11u);
  EXPECT_EQ(kept.capacity(), plain.layout().segment_size(2)) << "slot 2 keeps its input's storage; empty slots hold none";
  kept.shrink_to_fit();
  EXPECT_EQ(kept.capacity(), 11u);
  std::vector<int> want(11);
  std::iota(want.begin(), want.end(), 990);
  EXPECT_EQ(mg::to_vector(kept), want);
}

TEST(CopyIfErrors, AnOutputWithoutRoomGetsInvalidArgumentAndIsNotWritten) {
  mg::device_group g({0, 0, 0});
  const std::vector<int> host{5, -1, 7, 9, -3, 2, 8};  // five positive
  mg::distributed_vector<int> v(host, g);
  mg::distributed_vector<int> out(6, -9, g);
  try {
    (void)mg::copy_if(v.begin(), v.end(), out.begin() + 2, above<int>{0});
    FAIL() << "copy_if into room for 4 of 5 survivors did not throw";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("copy_if"), std::string::npos) << what;
    EXPECT_NE(what.find("5 of the 7"), std::string::npos) << what;
    EXPECT_NE(what.find("room for 4"), std::string::npos) << what;
  }
  EXPECT_EQ(mg::to_vector(out), std::vector<int>(6, -9)) << "nothing written";
  EXPECT_EQ(mg::to_vector(v), host);
  // Still usable: the same call with room.
  mg::distributed_vector<int> room(5, -9, g);
  auto end = mg::copy_if(v.begin(), v.end(), room.begin(), above<int>{0});
  EXPECT_EQ(end, room.end());
  EXPECT_EQ(mg::to_vector(room), (std::vector<int>{5, 7, 9, 2, 8}));

  EXPECT_THROW((void)mg::copy_if(v.begin(), v.end(), mg::distributed_vector<int>::iterator{}, above<int>{0}),
               std::invalid_argument);
  mg::distributed_vector<int> w(host, g);
  EXPECT_THROW((void)mg::copy_if(v.begin(), w.end(), above<int>{0}), std::invalid_argument) << "two vectors";
  EXPECT_THROW((void)mg::copy_if(v.begin() + 3, v.begin() + 1, above<int>{0}), std::invalid_argument) << "reversed";
}

}  // namespace
