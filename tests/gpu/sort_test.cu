// sort, stable_sort and sort_by_key against std::stable_sort on the host, over key types,
// distributions, sizes and group shapes. lower_bound, upper_bound and is_sorted are in
// lower_bound_test.cu.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

namespace {

using namespace test;

/// 0, 1, fewer than the slots, more, and primes.
std::vector<std::size_t> sort_sizes(std::size_t k) {
  if (tiny_run()) return {0, k + 1, 1009};
  std::vector<std::size_t> n{0, 1, 2, k - 1, k + 1, 1009};
  if (!small_run()) n.push_back(100003);
  return n;
}

enum class distribution_kind { random, sorted, reversed, all_equal, two_values, mostly_one };
const char* name(distribution_kind d) {
  switch (d) {
    case distribution_kind::random: return "random";
    case distribution_kind::sorted: return "sorted";
    case distribution_kind::reversed: return "reversed";
    case distribution_kind::all_equal: return "all equal";
    case distribution_kind::two_values: return "two values";
    case distribution_kind::mostly_one: return "99% one value";
  }
  return "?";
}
constexpr distribution_kind all_distributions[] = {distribution_kind::random,    distribution_kind::sorted,
                                                   distribution_kind::reversed,  distribution_kind::all_equal,
                                                   distribution_kind::two_values, distribution_kind::mostly_one};

/// Every distribution; under MULTIGPU_TEST_TINY a random one and a duplicate-heavy one.
std::vector<distribution_kind> distributions() {
  if (tiny_run()) return {distribution_kind::random, distribution_kind::two_values};
  return {std::begin(all_distributions), std::end(all_distributions)};
}

/// The order the library documents for arithmetic keys: CUB's radix order.
template <class K>
using radix_order = mg::detail::radix_less<K>;

/// Random keys over a wide range; floating point keys include -0.0, +0.0, infinities and
/// NaNs of both signs.
template <class K>
K wide_random() {
  if constexpr (std::is_floating_point_v<K>) {
    std::uniform_int_distribution<int> pick(0, 19);
    switch (pick(rng())) {
      case 0: return K(-0.0);
      case 1: return K(0.0);
      case 2: return std::numeric_limits<K>::quiet_NaN();
      case 3: return -std::numeric_limits<K>::quiet_NaN();
      case 4: return std::numeric_limits<K>::infinity();
      case 5: return -std::numeric_limits<K>::infinity();
      default: {
        std::uniform_real_distribution<double> d(-1e6, 1e6);
        return static_cast<K>(d(rng()));
      }
    }
  } else {
    std::uniform_int_distribution<long long> d(std::is_signed_v<K> ? -1000000 : 0, 1000000);
    return static_cast<K>(d(rng()));
  }
}

template <class K>
std::vector<K> make_keys(std::size_t n, distribution_kind kind) {
  std::vector<K> keys(n);
  const K a = wide_random<K>(), b = K(7);
  std::bernoulli_distribution coin(0.5), rare(0.01);
  for (auto& x : keys) switch (kind) {
      case distribution_kind::all_equal: x = K(3); break;
      case distribution_kind::two_values: x = coin(rng()) ? a : b; break;
      case distribution_kind::mostly_one: x = rare(rng()) ? wide_random<K>() : b; break;
      default: x = wide_random<K>();
    }
  if (kind == distribution_kind::sorted) std::stable_sort(keys.begin(), keys.end(), radix_order<K>{});
  if (kind == distribution_kind::reversed) {
    std::stable_sort(keys.begin(), keys.end(), radix_order<K>{});
    std::reverse(keys.begin(), keys.end());
  }
  return keys;
}

/// Bit-for-bit equality (tells -0.0 from +0.0, and NaNs apart).
template <class T>
::testing::AssertionResult same_bits(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes " << got.size() << " and " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", expected " << want[i];
  return ::testing::AssertionSuccess();
}

/// Equal up to elements the order cannot tell apart.
template <class T, class Order>
::testing::AssertionResult equivalent(const std::vector<T>& got, const std::vector<T>& want, Order order) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes " << got.size() << " and " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (order(got[i], want[i]) || order(want[i], got[i]))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", expected " << want[i];
  return ::testing::AssertionSuccess();
}

template <class K>
void expect_layout_kept(const mg::distributed_vector<K>& v, const mg::distribution& before) {
  EXPECT_TRUE(v.layout() == before) << "the sort changed the vector's layout";
}

template <class K>
class Sort : public ::testing::Test {};
using sort_key_types = ::testing::Types<int, unsigned, long long, float, double>;
TYPED_TEST_SUITE(Sort, sort_key_types);

TYPED_TEST(Sort, SortAndStableSortMatchTheHostOverDistributionsSizesAndShapes) {
  using K = TypeParam;
  for (const auto& s : exchange_shapes())
    for (std::size_t n : sort_sizes(s.group.size()))
      for (distribution_kind kind : distributions()) {
        SCOPED_TRACE(testing::Message() << s.name << " n=" << n << " " << name(kind));
        const auto host = make_keys<K>(n, kind);
        auto want = host;
        std::stable_sort(want.begin(), want.end(), radix_order<K>{});

        mg::distributed_vector<K> a(host, s.group);
        const mg::distribution layout = a.layout();
        mg::sort(a);
        expect_layout_kept(a, layout);
        EXPECT_TRUE(equivalent(mg::to_vector(a), want, radix_order<K>{}));
        EXPECT_TRUE(mg::is_sorted(a));

        mg::distributed_vector<K> b(host, s.group);
        mg::stable_sort(b);
        EXPECT_TRUE(same_bits(mg::to_vector(b), want));
      }
}

TYPED_TEST(Sort, LargeVectors) {
  using K = TypeParam;
  if constexpr (!std::is_same_v<K, unsigned> && !std::is_same_v<K, float>) {
    GTEST_SKIP() << "the large case runs for unsigned and float keys only";
  } else {
    if (small_run()) GTEST_SKIP() << "MULTIGPU_TEST_SMALL";
    const std::size_t n = (std::size_t{1} << 24) + 5;
    const auto host = make_keys<K>(n, distribution_kind::random);
    auto want = host;
    std::stable_sort(want.begin(), want.end(), radix_order<K>{});
    for (const auto& s : exchange_shapes()) {
      if (s.name == "{0}") continue;
      SCOPED_TRACE(s.name);
      mg::distributed_vector<K> v(host, s.group);
      mg::stable_sort(v);
      EXPECT_TRUE(same_bits(mg::to_vector(v), want));
    }
  }
}

TYPED_TEST(Sort, DuplicateHeavyKeysSplitExactlyAtTheSegments) {
  using K = TypeParam;
  // {0 x8} merges straight from the senders' runs; the host-staged group exchanges first.
  for (std::size_t which : {std::size_t{2}, std::size_t{3}}) {
    const auto& s = exchange_shapes()[which];
    SCOPED_TRACE(s.name);
    const bool in_place = s.group.options().peers != mg::peer_policy::host_staged;
    const std::size_t k = s.group.size();
    const std::size_t n = tiny_run() ? 10007 : 100003;
    for (distribution_kind kind :
         {distribution_kind::all_equal, distribution_kind::two_values, distribution_kind::mostly_one}) {
      SCOPED_TRACE(name(kind));
      const std::vector<K> host = make_keys<K>(n, kind);
      mg::distributed_vector<K> v(host, s.group);
      mg::detail::sort_stats stats;
      mg::detail::sort_in_layout(v, static_cast<mg::distributed_vector<mg::detail::no_values>*>(nullptr),
                                 cuda::std::less<>{}, &stats);
      ASSERT_EQ(stats.bucket_sizes.size(), k);
      for (std::size_t d = 0; d < k; ++d)
        EXPECT_EQ(stats.bucket_sizes[d], v.layout().segment_size(d))
            << "slot " << d << " received another size than its segment's";
      // All-equal keys keep their input order, so every run stays on its own slot: nothing
      // crosses, and every receiver reads in place, even on the host-staged group.
      EXPECT_EQ(stats.merged_in_place, in_place || kind == distribution_kind::all_equal);
      EXPECT_GE(stats.split_rounds, 1u);
      // At most 33,335 elements a slot, 512 candidates a run: two rounds (log512(33335) + 1),
      // and a margin.
      EXPECT_LE(stats.split_rounds, 4u) << "the exact splitting took more rounds than its bound";
      std::vector<K> want = host;
      std::stable_sort(want.begin(), want.end(), radix_order<K>{});
      EXPECT_TRUE(same_bits(mg::to_vector(v), want));
    }
  }
}

TYPED_TEST(Sort, SortByKeyKeepsEqualKeysInInputOrder) {
  using K = TypeParam;
  for (const auto& s : exchange_shapes())
    for (std::size_t n : sort_sizes(s.group.size()))
      for (distribution_kind kind : {distribution_kind::random, distribution_kind::two_values}) {
        SCOPED_TRACE(testing::Message() << s.name << " n=" << n << " " << name(kind));
        const auto keys_host = make_keys<K>(n, kind);
        std::vector<int> values_host(n);
        std::iota(values_host.begin(), values_host.end(), 0);
        std::vector<std::pair<K, int>> want(n);
        for (std::size_t i = 0; i < n; ++i) want[i] = {keys_host[i], values_host[i]};
        std::stable_sort(want.begin(), want.end(),
                         [](const auto& x, const auto& y) { return radix_order<K>{}(x.first, y.first); });

        mg::distributed_vector<K> keys(keys_host, s.group);
        mg::distributed_vector<int> values(values_host, s.group);
        mg::sort_by_key(keys, values);
        const auto got_keys = mg::to_vector(keys);
        const auto got_values = mg::to_vector(values);
        std::vector<K> want_keys(n);
        std::vector<int> want_values(n);
        for (std::size_t i = 0; i < n; ++i) std::tie(want_keys[i], want_values[i]) = want[i];
        EXPECT_TRUE(same_bits(got_keys, want_keys));
        EXPECT_TRUE(same_elements(got_values, want_values));
      }
}

TEST(SortLayouts, UnevenLayoutsAndHalosAreKept) {
  for (const auto& s : exchange_shapes()) {
    const std::size_t k = s.group.size();
    for (std::size_t n : {std::size_t{1}, std::size_t{1009}, std::size_t{100003}}) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const auto host = make_keys<int>(n, distribution_kind::two_values);
      auto want = host;
      std::stable_sort(want.begin(), want.end());
      // Everything in the last segment but a few in the first.
      std::vector<std::size_t> sizes(k, 0);
      sizes[0] = std::min<std::size_t>(n, 3);
      sizes[k - 1] += n - sizes[0];
      const auto layout = mg::distribution::from_sizes(sizes);
      mg::distributed_vector<int> uneven(s.group, layout);
      mg::detail::vector_access::upload(uneven, 0, host.data(), n);
      mg::sort(uneven);
      EXPECT_TRUE(uneven.layout() == layout);
      EXPECT_TRUE(same_elements(mg::to_vector(uneven), want));

      mg::distributed_vector<int> with_halo(n, mg::halo{2}, s.group);
      mg::detail::vector_access::upload(with_halo, 0, host.data(), n);
      mg::sort(with_halo);
      EXPECT_TRUE(same_elements(mg::to_vector(with_halo), want));
    }
  }
}

// ---- a user type with its own comparator: CUB merge sort -----------------------------------

struct record {
  int key;
  int payload;
  friend bool operator==(const record&, const record&) = default;
};
std::ostream& operator<<(std::ostream& out, const record& r) { return out << "{" << r.key << ", " << r.payload << "}"; }
struct by_key {
  __host__ __device__ bool operator()(const record& a, const record& b) const { return a.key < b.key; }
};

std::vector<record> make_records(std::size_t n, distribution_kind kind) {
  const auto keys = make_keys<int>(n, kind);
  std::vector<record> r(n);
  for (std::size_t i = 0; i < n; ++i) r[i] = {keys[i], static_cast<int>(i)};
  return r;
}

TEST(SortRecords, UserComparatorSortsAndStableSortKeepsOrder) {
  for (const auto& s : exchange_shapes())
    for (std::size_t n : sort_sizes(s.group.size()))
      for (distribution_kind kind : distributions()) {
        SCOPED_TRACE(testing::Message() << s.name << " n=" << n << " " << name(kind));
        const auto host = make_records(n, kind);
        auto want = host;
        std::stable_sort(want.begin(), want.end(), by_key{});
        mg::distributed_vector<record> a(host, s.group);
        mg::sort(a, by_key{});
        EXPECT_TRUE(equivalent(mg::to_vector(a), want, by_key{}));
        EXPECT_TRUE(mg::is_sorted(a, by_key{}));
        mg::distributed_vector<record> b(host, s.group);
        mg::stable_sort(b, by_key{});
        EXPECT_TRUE(same_elements(mg::to_vector(b), want));
      }
}

TEST(SortRecords, SortByKeyWithComparatorAndValuesInAnotherLayout) {
  for (const auto& s : exchange_shapes())
    for (std::size_t n : sort_sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const auto host = make_records(n, distribution_kind::two_values);
      std::vector<long long> values_host(n);
      for (std::size_t i = 0; i < n; ++i) values_host[i] = static_cast<long long>(i) * 3 + 1;
      std::vector<std::size_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t x, std::size_t y) { return by_key{}(host[x], host[y]); });

      mg::distributed_vector<record> keys(host, s.group);
      // Values laid out differently: everything in the last segment.
      std::vector<std::size_t> skewed(s.group.size(), 0);
      skewed.back() = n;
      mg::distributed_vector<long long> values(s.group, mg::distribution::from_sizes(skewed));
      mg::detail::vector_access::upload(values, 0, values_host.data(), n);
      mg::sort_by_key(keys, values, by_key{});
      EXPECT_TRUE(values.layout() == mg::distribution::from_sizes(skewed));
      const auto got_keys = mg::to_vector(keys);
      const auto got_values = mg::to_vector(values);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got_keys[i], host[order[i]]) << "key " << i;
        ASSERT_EQ(got_values[i], values_host[order[i]]) << "value " << i;
      }
    }
}

TEST(SortErrors, KeysAndValuesMustMatch) {
  const auto& s = exchange_shapes()[1];
  mg::distributed_vector<int> keys(10, s.group);
  mg::distributed_vector<int> shorter(9, s.group);
  mg::distributed_vector<int> elsewhere(10, mg::device_group({0, 0, 0}));
  try {
    mg::sort_by_key(keys, shorter);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("10"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mg::sort_by_key(keys, elsewhere), std::invalid_argument);
  EXPECT_THROW(mg::sort_by_key(keys, keys), std::invalid_argument);
}

// A comparator that is not a strict weak order (here <=) is the caller's bug, but it must
// neither hang the sort nor move data out of bounds: the call returns or throws
// std::invalid_argument, and either way the vector holds a permutation of its input and
// stays usable.
TEST(SortErrors, LessOrEqualAsTheComparatorNeverHangsOrCorrupts) {
  for (const auto& s : exchange_shapes()) {
    SCOPED_TRACE(s.name);
    const std::vector<std::vector<int>> inputs{std::vector<int>(1001, 3),
                                               make_keys<int>(1001, distribution_kind::two_values)};
    for (const std::vector<int>& host : inputs) {
      mg::distributed_vector<int> v(host, s.group);
      const bool all_equal = host.front() == host.back() && std::adjacent_find(host.begin(), host.end(),
                                                                                std::not_equal_to<>{}) == host.end();
      try {
        mg::sort(v, cuda::std::less_equal<>{});
        // With <= every element comes before every equal one, so the split can never
        // settle on all-equal keys over several slots.
        EXPECT_FALSE(all_equal && s.group.size() > 1) << "<= on all-equal keys was not noticed";
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("not a strict weak order"), std::string::npos) << e.what();
      }
      std::vector<int> got = mg::to_vector(v), want = host;
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      EXPECT_EQ(got, want) << "the vector no longer holds a permutation of its input";
      mg::sort(v);
      EXPECT_EQ(mg::to_vector(v), want) << "the next sort went wrong";
    }
  }
}

/// `<=` on the tens digit: every key from 30 to 39 counts as before every other, so over
/// several slots the exact split can never settle.
struct tens_at_most {
  __host__ __device__ bool operator()(int a, int b) const { return a / 10 <= b / 10; }
};

// sort_by_key refuses that comparator too, and both vectors stay usable, also with the
// values in another layout. (Which pairs survive is not checked: with a comparator for which
// comp(x, x) holds, CUB's merge sort itself can pair a key with another element's value.)
TEST(SortErrors, SortByKeyStaysUsableWhenTheComparatorIsRefused) {
  const auto& s = exchange_shapes()[1];  // {0,0,0}
  const std::size_t n = 1001;
  std::vector<int> keys_host(n);
  for (std::size_t i = 0; i < n; ++i) keys_host[i] = 30 + static_cast<int>(i * 7 % 10);
  const std::vector<long long> values_host(keys_host.begin(), keys_host.end());
  for (bool same_layout : {true, false}) {
    SCOPED_TRACE(same_layout ? "values in the keys' layout" : "values in another layout");
    mg::distributed_vector<int> keys(keys_host, s.group);
    std::vector<std::size_t> skewed(s.group.size(), 0);
    skewed.back() = n;
    const mg::distribution values_layout =
        same_layout ? keys.layout() : mg::distribution::from_sizes(skewed);
    mg::distributed_vector<long long> values(s.group, values_layout);
    mg::detail::vector_access::upload(values, 0, values_host.data(), n);
    EXPECT_THROW(mg::sort_by_key(keys, values, tens_at_most{}), std::invalid_argument);
    EXPECT_TRUE(values.layout() == values_layout);
    // Usable: new contents and a sort_by_key with the default order are right.
    mg::detail::vector_access::upload(keys, 0, keys_host.data(), n);
    mg::detail::vector_access::upload(values, 0, values_host.data(), n);
    mg::sort_by_key(keys, values);
    const std::vector<int> sorted_keys = mg::to_vector(keys);
    const std::vector<long long> sorted_values = mg::to_vector(values);
    ASSERT_TRUE(std::is_sorted(sorted_keys.begin(), sorted_keys.end()));
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sorted_values[i], sorted_keys[i]) << "element " << i;
  }
}

}  // namespace
