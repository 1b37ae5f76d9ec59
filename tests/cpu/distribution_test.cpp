#include <multigpu/container/distribution.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mg = multigpu;
using mg::distribution;

namespace {

// Independent reference: sizes by counting, one element at a time, round robin over the
// first n % k segments.
std::vector<std::size_t> reference_sizes(std::size_t n, std::size_t k) {
  std::vector<std::size_t> sizes(k, n / k);
  for (std::size_t s = 0; s < n % k; ++s) ++sizes[s];
  return sizes;
}

void expect_tiles(const distribution& d, std::size_t n, std::size_t k) {
  ASSERT_EQ(d.size(), n);
  ASSERT_EQ(d.segment_count(), k);
  auto expected = reference_sizes(n, k);
  std::size_t offset = 0, smallest = n, largest = 0;
  for (std::size_t s = 0; s < k; ++s) {
    EXPECT_EQ(d.segment_offset(s), offset) << "segment " << s;
    EXPECT_EQ(d.segment_size(s), expected[s]) << "segment " << s;
    offset += d.segment_size(s);
    smallest = std::min(smallest, d.segment_size(s));
    largest = std::max(largest, d.segment_size(s));
  }
  EXPECT_EQ(offset, n);
  EXPECT_LE(largest - smallest, 1u);
}

TEST(Distribution, BlockRejectsASegmentCountWhoseOffsetsOverflow) {
  // k + 1 offsets: a k near SIZE_MAX must be refused by name, not wrap to an empty table.
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  for (std::size_t k : {max, max - 1, max / 2}) {
    try {
      (void)distribution::block(5, k);
      ADD_FAILURE() << "block(5, " << k << ") did not throw";
    } catch (const std::length_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(k)), std::string::npos) << e.what();
    }
  }
}

}  // namespace

TEST(Distribution, BlockTilesAwkwardSizes) {
  for (std::size_t k : {1u, 2u, 3u, 7u, 8u, 13u})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, k - 1, k, k + 1, std::size_t{1000003},
                          (std::size_t{1} << 24) + 5}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " k=" << k);
      expect_tiles(distribution::block(n, k), n, k);
    }
}

TEST(Distribution, BlockHandlesSizesNear2To40WithoutOverflow) {
  const std::size_t n = (std::size_t{1} << 40) + 12345;
  for (std::size_t k : {1u, 3u, 7u, 8u, 1000u}) {
    distribution d = distribution::block(n, k);
    EXPECT_EQ(d.size(), n);
    EXPECT_EQ(d.segment_offset(k), n);
    auto last = d.locate(n - 1);
    EXPECT_EQ(last.segment, k - 1);
    EXPECT_EQ(last.local, d.segment_size(k - 1) - 1);
    auto mid = d.locate(n / 2);
    EXPECT_EQ(d.segment_offset(mid.segment) + mid.local, n / 2);
  }
}

TEST(Distribution, LocateMatchesALinearWalk) {
  for (std::size_t k : {1u, 3u, 5u, 8u})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{17}, std::size_t{100}}) {
      distribution d = distribution::block(n, k);
      std::size_t segment = 0, local = 0;
      for (std::size_t i = 0; i < n; ++i) {
        while (local == d.segment_size(segment)) {
          ++segment;
          local = 0;
        }
        EXPECT_EQ(d.locate(i), (distribution::location{segment, local})) << "i=" << i << " n=" << n << " k=" << k;
        ++local;
      }
      EXPECT_THROW(d.locate(n), std::out_of_range);
    }
}

TEST(Distribution, LocateSkipsEmptySegments) {
  std::vector<std::size_t> sizes{0, 3, 0, 0, 2, 0};
  distribution d = distribution::from_sizes(sizes);
  EXPECT_EQ(d.locate(0), (distribution::location{1, 0}));
  EXPECT_EQ(d.locate(2), (distribution::location{1, 2}));
  EXPECT_EQ(d.locate(3), (distribution::location{4, 0}));
  EXPECT_EQ(d.locate(4), (distribution::location{4, 1}));
}

TEST(Distribution, SplitCoversTheRangeInOrder) {
  distribution d = distribution::block(10, 3);  // 4, 3, 3
  auto pieces = d.split(2, 9);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0], (mg::piece{0, 2, 2}));
  EXPECT_EQ(pieces[1], (mg::piece{1, 0, 3}));
  EXPECT_EQ(pieces[2], (mg::piece{2, 0, 2}));
  EXPECT_TRUE(d.split(5, 5).empty());
  auto inner = d.split(5, 6);
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_EQ(inner[0], (mg::piece{1, 1, 1}));
  EXPECT_THROW(d.split(3, 11), std::invalid_argument);
  EXPECT_THROW(d.split(4, 3), std::invalid_argument);
}

TEST(Distribution, SplitOfEveryRangeSumsToItsLength) {
  for (std::size_t k : {1u, 2u, 5u})
    for (std::size_t n : {0u, 1u, 4u, 11u}) {
      distribution d = distribution::block(n, k);
      for (std::size_t first = 0; first <= n; ++first)
        for (std::size_t last = first; last <= n; ++last) {
          auto pieces = d.split(first, last);
          std::size_t global = first;
          for (const auto& p : pieces) {
            EXPECT_GT(p.count, 0u);
            EXPECT_EQ(d.segment_offset(p.slot) + p.local_offset, global);
            global += p.count;
          }
          EXPECT_EQ(global, last);
        }
    }
}

TEST(Distribution, SplitIntoGivesTheSplitsPiecesInPlaceOrOnTheHeap) {
  // Up to eight pieces stay in the list itself; more move to the heap, in order.
  for (std::size_t k : {1u, 7u, 8u, 9u, 20u}) {
    distribution d = distribution::block(3 * k + 1, k);
    mg::piece_list list;
    list.push_back({99, 0, 1});  // split_into starts from an empty list
    for (std::size_t first : {std::size_t{0}, std::size_t{2}})
      for (std::size_t last : {first, std::size_t{3 * k}, std::size_t{3 * k + 1}}) {
        d.split_into(first, last, list);
        const auto want = d.split(first, last);
        ASSERT_EQ(list.size(), want.size()) << "k=" << k << " [" << first << ", " << last << ")";
        EXPECT_EQ(list.empty(), want.empty());
        for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(list[i], want[i]) << i;
        EXPECT_TRUE(std::equal(list.begin(), list.end(), want.begin(), want.end()));
        const std::span<const mg::piece> view = list;
        EXPECT_EQ(view.size(), want.size());
        if (!want.empty()) {
          EXPECT_EQ(list.front(), want.front());
          EXPECT_EQ(list.back(), want.back());
        }
        mg::piece_list copy = list;  // copies keep their own storage
        EXPECT_EQ(copy, list);
        list.clear();
        EXPECT_TRUE(list.empty());
        EXPECT_EQ(copy.size(), want.size());
        d.split_into(first, last, list);
      }
    EXPECT_THROW(d.split_into(1, 0, list), std::invalid_argument);
  }
}

TEST(Distribution, AMovedFromPieceListIsEmpty) {
  for (std::size_t k : {3u, 12u}) {  // in place, and on the heap
    const distribution d = distribution::block(5 * k, k);
    mg::piece_list list;
    d.split_into(0, 5 * k, list);
    mg::piece_list moved(std::move(list));
    EXPECT_EQ(moved.size(), k);
    EXPECT_TRUE(list.empty()) << k;  // NOLINT(bugprone-use-after-move): what a move leaves
    list.push_back({1, 2, 3});
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0], (mg::piece{1, 2, 3}));
    mg::piece_list assigned;
    assigned = std::move(moved);
    EXPECT_EQ(assigned.size(), k);
    EXPECT_TRUE(moved.empty()) << k;  // NOLINT(bugprone-use-after-move)
    for (std::size_t s = 0; s < k; ++s) EXPECT_EQ(assigned[s], (mg::piece{s, 0, 5}));
  }
}

TEST(Distribution, AlignedComparesSlotsAndCounts) {
  distribution a = distribution::block(10, 3), b = distribution::block(10, 3), c = distribution::block(11, 3);
  EXPECT_TRUE(mg::aligned(a.split(0, 10), b.split(0, 10)));
  EXPECT_TRUE(mg::aligned(a.split(1, 4), b.split(1, 4)));
  EXPECT_FALSE(mg::aligned(a.split(0, 10), c.split(0, 10)));  // 4,3,3 against 4,4,3 ... shifted
  EXPECT_FALSE(mg::aligned(a.split(0, 5), a.split(1, 6)));
  // Ranges at different offsets line up when their pieces have the same slots and counts.
  distribution d = distribution::from_sizes(std::vector<std::size_t>{6, 3, 3});
  EXPECT_TRUE(mg::aligned(a.split(2, 10), d.split(4, 12)));
}

TEST(Distribution, RejectsZeroSegments) {
  EXPECT_THROW(distribution::block(5, 0), std::invalid_argument);
  EXPECT_THROW(distribution::from_sizes(std::vector<std::size_t>{}), std::invalid_argument);
}
