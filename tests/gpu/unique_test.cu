// unique_copy and unique against std::unique_copy and std::unique on the host: both forms,
// runs that cross slots, and a predicate other than ==.
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
class Unique : public ::testing::Test {};
TYPED_TEST_SUITE(Unique, select_types);

TYPED_TEST(Unique, UniqueKeepsTheFirstOfEveryRun) {
  using T = TypeParam;
  const T sentinel = with_key<T>(-7777);
  const char* kinds[] = {"random", "runs of 3", "one run", "runs across slots"};
  for (const auto& s : exchange_shapes())
    for (std::size_t n : sizes(s.group.size(), std::is_same_v<T, long long>))
      for (int kind = 0; kind < 4; ++kind) {
        if (n > 2000000 && kind != 3) continue;
        SCOPED_TRACE(testing::Message() << s.name << " n=" << n << ", " << kinds[kind]);
        mg::distributed_vector<T> v(n, s.group);
        const auto host = runs_input<T>(n, kind);
        mg::copy(host.begin(), host.end(), v.begin());
        std::vector<T> want;
        std::unique_copy(host.begin(), host.end(), std::back_inserter(want));

        // Layout kept: each slot keeps the runs that start on it.
        mg::distributed_vector<T> kept = mg::unique_copy(v);
        std::vector<std::size_t> starts(v.layout().segment_count(), 0);
        for (std::size_t slot = 0; slot < starts.size(); ++slot)
          for (std::size_t j = 0; j < v.layout().segment_size(slot); ++j) {
            const std::size_t i = v.layout().segment_offset(slot) + j;
            starts[slot] += (i == 0 || !(host[i] == host[i - 1])) ? 1 : 0;
          }
        EXPECT_EQ(kept.layout(), mg::distribution::from_sizes(starts));
        EXPECT_TRUE(same_elements(mg::to_vector(kept), want)) << "unique_copy, layout kept";

        // The STL form into another vector from index 1, and a predicate other than ==.
        mg::distributed_vector<T> out(n + 1, sentinel, s.group);
        auto end = mg::unique_copy(v.cbegin(), v.cend(), out.begin() + 1);
        EXPECT_EQ(end - out.begin(), static_cast<std::ptrdiff_t>(1 + want.size()));
        std::vector<T> expect(n + 1, sentinel);
        std::copy(want.begin(), want.end(), expect.begin() + 1);
        EXPECT_TRUE(same_elements(mg::to_vector(out), expect)) << "unique_copy, STL form";
        std::vector<T> tens;
        std::unique_copy(host.begin(), host.end(), std::back_inserter(tens), same_tens<T>{});
        EXPECT_TRUE(same_elements(mg::to_vector(mg::unique_copy(v, same_tens<T>{})), tens)) << "same_tens";

        // In place, then trimmed.
        auto new_end = mg::unique(v);
        ASSERT_EQ(new_end - v.begin(), static_cast<std::ptrdiff_t>(want.size()));
        v.resize(want.size());
        EXPECT_TRUE(same_elements(mg::to_vector(v), want)) << "unique, then resize";
      }
}

}  // namespace
