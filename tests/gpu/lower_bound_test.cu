// lower_bound, upper_bound and is_sorted against std::lower_bound, std::upper_bound and
// std::is_sorted on the host, over key types, sizes (0, 1, fewer elements than slots, primes)
// and group shapes, with descents inside a segment and across every segment boundary.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>
#include <random>

namespace {

using namespace test;

/// 0, 1, fewer than the slots, more, and primes.
std::vector<std::size_t> bound_sizes(std::size_t k) {
  if (tiny_run()) return {0, k + 1, 1009};
  std::vector<std::size_t> n{0, 1, 2, k - 1, k + 1, 1009};
  if (!small_run()) n.push_back(100003);
  return n;
}

template <class K>
class LowerBound : public ::testing::Test {};
using key_types = ::testing::Types<int, unsigned, long long, float, double>;
TYPED_TEST_SUITE(LowerBound, key_types);

TYPED_TEST(LowerBound, BoundsAndIsSortedMatchTheHost) {
  using K = TypeParam;
  for (const auto& s : exchange_shapes())
    for (std::size_t n : bound_sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      // Small integer-valued keys: many duplicates, no NaN (bounds need a strict weak order).
      std::vector<K> host(n);
      std::uniform_int_distribution<int> d(0, 50);
      for (auto& x : host) x = static_cast<K>(d(rng()));
      std::sort(host.begin(), host.end());
      mg::distributed_vector<K> v(host, s.group);
      EXPECT_TRUE(mg::is_sorted(v));
      for (int q : {-1, 0, 7, 25, 50, 51}) {
        if (std::is_unsigned_v<K> && q < 0) continue;
        const K value = static_cast<K>(q);
        EXPECT_EQ(mg::lower_bound(v, value) - v.begin(), std::lower_bound(host.begin(), host.end(), value) - host.begin())
            << "value " << value;
        EXPECT_EQ(mg::upper_bound(v, value) - v.begin(), std::upper_bound(host.begin(), host.end(), value) - host.begin())
            << "value " << value;
      }
      if (n >= 2 && host.front() != host.back()) {
        // A descent inside a segment, and one across the first segment boundary.
        auto unsorted = host;
        std::swap(unsorted.front(), unsorted.back());
        mg::distributed_vector<K> w(unsorted, s.group);
        EXPECT_FALSE(mg::is_sorted(w));
        // A descent across each boundary between segments (empty segments in between too).
        for (std::size_t slot = 1; slot < s.group.size(); ++slot) {
          const std::size_t cut = v.layout().segment_offset(slot);
          if (cut == 0 || cut >= n || host[cut - 1] == host[cut]) continue;
          SCOPED_TRACE(testing::Message() << "descent across the boundary before slot " << slot);
          auto across = host;
          std::swap(across[cut - 1], across[cut]);
          mg::distributed_vector<K> x(across, s.group);
          EXPECT_FALSE(mg::is_sorted(x));
        }
      }
    }
}

}  // namespace
