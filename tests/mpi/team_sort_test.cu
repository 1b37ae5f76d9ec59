// Team sort and search under mpirun against std::stable_sort, std::lower_bound and
// std::upper_bound of the whole global vector, which every rank builds for itself. Values
// carry each key's global input position, so a wrong order of equal keys shows.

#include "support.hpp"
#include "team_support.hpp"

#include <multigpu/team/team_algorithms.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace mg = multigpu;
using namespace mg_test;

namespace {

int few_keys(std::size_t i) { return static_cast<int>((i * 37u) % 11u); }  // duplicates everywhere
int many_keys(std::size_t i) { return static_cast<int>((i * 2654435761u) % 1000003u) - 500000; }
float float_keys(std::size_t i) { return static_cast<float>(static_cast<int>((i * 7919u) % 201u) - 100) * 0.25f; }
std::uint64_t position(std::size_t i) { return i; }

// The stable order of [0, n) by the keys key(i) under comp.
template <class Key, class Comp>
std::vector<std::uint64_t> stable_order(std::size_t n, Key key, Comp comp) {
  std::vector<std::uint64_t> order(n);
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) { return comp(key(a), key(b)); });
  return order;
}

template <class T>
std::vector<T> local_part(const mg::team_vector<T>& v) {
  return mg::to_vector(v.local());
}

template <class Key, class Comp>
void check_sort_by_key(const mg::team& t, const layout& l, const mg::device_group& g, Key key, Comp comp) {
  using K = decltype(key(0));
  auto keys = make<K>(t, l, g, key);
  auto values = make<std::uint64_t>(t, l, g, position);
  const std::size_t local_before = keys.local_size();
  mg::sort_by_key(keys, values, comp);
  EXPECT_EQ(keys.local_size(), local_before);
  const std::vector<std::uint64_t> order = stable_order(keys.size(), key, comp);
  std::vector<K> sorted(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) sorted[i] = key(order[i]);
  EXPECT_EQ(mg::to_vector(keys), sorted);
  EXPECT_EQ(mg::to_vector(values), order);  // equal keys in their input order
  EXPECT_TRUE(mg::is_sorted(keys, comp));
}

}  // namespace

TEST(TeamSort, SortByKeyIsStableAndKeepsEveryRanksSize) {
  mg::team t = world();
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g));
      check_sort_by_key(t, l, g, few_keys, cuda::std::less<>{});
      check_sort_by_key(t, l, g, many_keys, cuda::std::less<>{});
      check_sort_by_key(t, l, g, float_keys, cuda::std::greater<>{});
    }
}

TEST(TeamSort, SortAndStableSortOfKeys) {
  mg::team t = world();
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g));
      auto v = make<int>(t, l, g, many_keys);
      std::vector<int> host = reference<int>(v.size(), many_keys);
      mg::sort(v);
      std::sort(host.begin(), host.end());
      EXPECT_EQ(mg::to_vector(v), host);
      auto d = make<double>(t, l, g, [](std::size_t i) { return 1.0 / (1.0 + static_cast<double>(few_keys(i))); });
      std::vector<double> host_d = mg::to_vector(d);
      mg::stable_sort(d, cuda::std::greater<>{});
      std::stable_sort(host_d.begin(), host_d.end(), cuda::std::greater<>{});
      EXPECT_EQ(mg::to_vector(d), host_d);
    }
}

TEST(TeamSort, IsSortedAndBounds) {
  mg::team t = world();
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g));
      auto v = make<int>(t, l, g, few_keys);
      std::vector<int> host = reference<int>(v.size(), few_keys);
      EXPECT_EQ(mg::is_sorted(v), std::is_sorted(host.begin(), host.end()));
      mg::sort(v);
      std::sort(host.begin(), host.end());
      EXPECT_TRUE(mg::is_sorted(v));
      for (int probe : {-1, 0, 3, 5, 10, 11}) {
        EXPECT_EQ(mg::lower_bound(v, probe),
                  static_cast<std::size_t>(std::lower_bound(host.begin(), host.end(), probe) - host.begin()))
            << probe;
        EXPECT_EQ(mg::upper_bound(v, probe),
                  static_cast<std::size_t>(std::upper_bound(host.begin(), host.end(), probe) - host.begin()))
            << probe;
      }
    }
}

// Every rank's part sorted on its own, but out of order across a rank boundary.
TEST(TeamSort, IsSortedSeesRankBoundaries) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  mg::team t = world();
  mg::team_vector<int> v(t, 3, groups()[0]);
  const std::vector<int> mine{10 - 3 * t.rank(), 11 - 3 * t.rank(), 12 - 3 * t.rank()};  // 10 11 12 | 7 8 9 ...
  mg::detail::vector_access::upload(v.local(), 0, mine.data(), mine.size());
  EXPECT_FALSE(mg::is_sorted(v));
  mg::sort(v);
  EXPECT_TRUE(mg::is_sorted(v));
  EXPECT_EQ(mg::lower_bound(v, 10), static_cast<std::size_t>(3 * t.size() - 3));
}

// With one local slot the team sort and redistribute can exchange device memory
// (exchange_path::device); exchange_path::host forces the path through host memory. Both give
// the stable sort. exchange_path::automatic (the default) takes the device path for parts
// larger than the team's threshold.
TEST(TeamSort, BothExchangePathsAgree) {
  mg::team t = world();
  EXPECT_EQ(t.exchange(), mg::exchange_path::automatic);
  EXPECT_EQ(t.device_exchange_threshold(), mg::default_device_exchange_threshold);
  const mg::device_group g = groups()[0];
  for (mg::exchange_path path : {mg::exchange_path::device, mg::exchange_path::host}) {
    t.set_exchange(path);
    for (const layout& l : layouts()) {
      SCOPED_TRACE(describe(l, g) + (path == mg::exchange_path::host ? ", through host memory" : ", device memory"));
      check_sort_by_key(t, l, g, few_keys, cuda::std::less<>{});
      check_sort_by_key(t, l, g, many_keys, cuda::std::greater<>{});
      auto v = make<int>(t, l, g, many_keys);
      auto even = mg::team_vector<int>::block(t, v.size(), g);
      EXPECT_EQ(mg::detail::exchange_on_device(t, v.local(), even.local()), path == mg::exchange_path::device)
          << "the MPI communicator takes device buffers, and the parts are one slot";
      mg::redistribute(v, even);
      EXPECT_EQ(mg::to_vector(even), reference<int>(v.size(), many_keys));
      mg::redistribute(even, v);
      EXPECT_EQ(mg::to_vector(v), reference<int>(v.size(), many_keys));
    }
  }
  EXPECT_EQ(t.exchange(), mg::exchange_path::host);
  // automatic: by the size of the largest part, against the threshold (shared by copies).
  // With everything moving to rank 0, rank 0 goes device to device and the others through
  // host memory: the paths make the same calls.
  t.set_exchange(mg::exchange_path::automatic);
  const mg::team copy = t;
  auto v = mg::team_vector<int>::block(t, 1000 * static_cast<std::size_t>(t.size()), g);
  mg::team_vector<int> w(t, t.rank() == 0 ? v.size() : 0, g);
  const std::size_t part = v.local_size() * sizeof(int);
  t.set_device_exchange_threshold(part);
  EXPECT_EQ(copy.device_exchange_threshold(), part);
  EXPECT_FALSE(mg::detail::exchange_on_device(t, v.local(), v.local())) << "parts of exactly the threshold: host";
  EXPECT_EQ(mg::detail::exchange_on_device(t, v.local(), w.local()), t.size() > 1 && t.rank() == 0)
      << "the largest part decides";
  EXPECT_FALSE(mg::detail::exchange_on_device(
      t, v.local(), mg::distributed_vector<int>(v.size(), mg::device_group({g.device(0), g.device(0)}))))
      << "a part of two slots: host at any size";
  std::vector<int> mine(v.local_size());
  std::iota(mine.begin(), mine.end(), static_cast<int>(v.offset()));
  mg::detail::vector_access::upload(v.local(), 0, mine.data(), mine.size());
  mg::redistribute(v, w);
  std::vector<int> all(v.size());
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(mg::to_vector(w), all);
  t.set_device_exchange_threshold(part - 1);
  EXPECT_TRUE(mg::detail::exchange_on_device(t, v.local(), v.local())) << "parts over the threshold: device";
  mg::redistribute(w, v);
  EXPECT_EQ(mg::to_vector(v), all);
  t.set_device_exchange_threshold(mg::default_device_exchange_threshold);
}

// 2^24 keys per rank on up to two ranks (2^22 beyond): each rank checks its own part against
// the stable sort of the whole input.
TEST(TeamSort, LargeSortByKeyMatchesStableSort) {
  mg::team t = world();
  const std::size_t per_rank = world_size() <= 2 ? (std::size_t{1} << 24) : (std::size_t{1} << 22);
  auto key = [](std::size_t i) { return static_cast<std::uint32_t>((i * 2654435761u) >> 12); };  // 2^20 distinct
  const mg::device_group g = groups()[0];  // keys and values on one group, as sort_by_key needs
  auto keys = mg::team_vector<std::uint32_t>::block(t, per_rank * static_cast<std::size_t>(t.size()), g);
  auto values = mg::team_vector<std::uint64_t>::block(t, keys.size(), g);
  std::vector<std::uint32_t> k(keys.local_size());
  std::vector<std::uint64_t> p(keys.local_size());
  for (std::size_t i = 0; i < k.size(); ++i) {
    k[i] = key(keys.offset() + i);
    p[i] = keys.offset() + i;
  }
  mg::detail::vector_access::upload(keys.local(), 0, k.data(), k.size());
  mg::detail::vector_access::upload(values.local(), 0, p.data(), p.size());
  mg::sort_by_key(keys, values);
  const std::vector<std::uint64_t> order = stable_order(keys.size(), key, cuda::std::less<>{});
  const auto first = order.begin() + static_cast<std::ptrdiff_t>(keys.offset());
  EXPECT_TRUE(std::equal(first, first + static_cast<std::ptrdiff_t>(keys.local_size()), local_part(values).begin()));
  const std::vector<std::uint32_t> got = local_part(keys);
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != key(order[keys.offset() + i])) {
      ADD_FAILURE() << "key " << keys.offset() + i << " differs";
      break;
    }
}

TEST(TeamSort, KeysAndValuesLaidOutDifferentlyAreRejected) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  mg::team t = world();
  auto keys = mg::team_vector<int>::block(t, 10, groups()[0]);
  mg::team_vector<int> values(t, t.rank() == 0 ? 10 : 0, groups()[0]);
  try {
    mg::sort_by_key(keys, values);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("laid out differently"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(mg::is_sorted(values));  // still in step
}

TEST(TeamSort, MismatchedCallsAreDetected) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  mg::team t = world();
  auto v = mg::team_vector<int>::block(t, 100, groups()[0]);
  mg::iota(v, 0);
  try {
    if (t.rank() == 0) mg::sort(v);
    else (void)mg::is_sorted(v);
    ADD_FAILURE() << "no mismatch reported";
  } catch (const mg::comm_error& e) {
    EXPECT_NE(std::string(e.what()).find("mismatch"), std::string::npos) << e.what();
  }
  EXPECT_EQ(mg::lower_bound(v, 50), 50u);
}
