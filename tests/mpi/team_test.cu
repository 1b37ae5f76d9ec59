// Team algorithms under mpirun (every rank on its bootstrap GPU, GPU 0 on a one-GPU machine)
// against a host reference of the whole global vector, which every rank builds for itself.
// Layouts: awkward rank sizes (0 on some ranks, 1, primes, everything on one rank) and local
// groups of one slot or two slots of one GPU (hybrid ranks x slots).

#include "support.hpp"
#include "team_support.hpp"

#include <multigpu/comm.hpp>
#include <multigpu/team/team_algorithms.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace mg = multigpu;
using namespace mg_test;

namespace {

// A 2x2 matrix of integers modulo 2^32: multiplication is associative, not commutative.
struct mat2 {
  std::uint32_t a, b, c, d;
  friend bool operator==(const mat2&, const mat2&) = default;
};
struct mat_mul {
  __host__ __device__ mat2 operator()(const mat2& x, const mat2& y) const {
    return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
  }
};
constexpr mat2 identity{1, 0, 0, 1};

struct plus_one {
  __host__ __device__ void operator()(int& x) const { x += 1; }
};
struct square {
  __host__ __device__ long long operator()(int x) const { return static_cast<long long>(x) * x; }
};
struct is_even {
  __host__ __device__ bool operator()(int x) const { return x % 2 == 0; }
};

int value_int(std::size_t i) { return static_cast<int>((i * 7919u) % 1001u) - 500; }
mat2 value_mat(std::size_t i) {
  auto k = static_cast<std::uint32_t>(i);
  return {k + 1, 2 * k + 3, k % 5, 7 + (k % 3)};
}

}  // namespace

TEST(TeamVector, LayoutComesFromEveryRanksSize) {
  mg::team t = world();
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g));
      mg::team_vector<int> v(t, l.local_size(t.rank(), t.size()), g);
      std::size_t total = 0;
      for (int r = 0; r < t.size(); ++r) {
        EXPECT_EQ(v.layout().segment_offset(static_cast<std::size_t>(r)), total);
        EXPECT_EQ(v.layout().segment_size(static_cast<std::size_t>(r)), l.local_size(r, t.size()));
        total += l.local_size(r, t.size());
      }
      EXPECT_EQ(v.size(), total);
      EXPECT_EQ(v.local_size(), l.local_size(t.rank(), t.size()));
      EXPECT_EQ(v.local().segment_count(), g.size());
    }
  for (std::size_t n : {0u, 1u, 3u, 1009u}) {
    auto v = mg::team_vector<int>::block(t, n, groups()[1]);
    EXPECT_EQ(v.size(), n);
    EXPECT_EQ(v.layout(), mg::distribution::block(n, static_cast<std::size_t>(t.size())));
  }
}

// iota rounds once, as the single-process one: value + T(global index), also on a rank whose
// offset is past 2^24, where float(offset) + i and float(offset + i) differ.
TEST(TeamVector, IotaOfFloatsRoundsOnce) {
  mg::team t = world();
  const std::size_t big = (std::size_t{1} << 24) + 3;  // every rank starts past 2^24 but rank 0
  mg::team_vector<float> v(t, t.rank() == 0 ? big : 64);
  mg::iota(v, 0.5f);
  const std::vector<float> local = mg::to_vector(v.local());
  for (std::size_t i = 0; i < local.size(); i += (i < 64 ? 1 : 4099)) {
    const float want = 0.5f + static_cast<float>(v.offset() + i);
    ASSERT_EQ(local[i], want) << "global index " << v.offset() + i;
  }
}

TEST(TeamVector, LocalAlgorithmsAndToVector) {
  mg::team t = world();
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g));
      mg::team_vector<int> v(t, l.local_size(t.rank(), t.size()), g);
      mg::iota(v, -3);
      std::vector<int> expected(v.size());
      std::iota(expected.begin(), expected.end(), -3);
      EXPECT_EQ(mg::to_vector(v), expected);
      mg::for_each(v, plus_one{});
      for (int& x : expected) x += 1;
      for (int root = 0; root < t.size(); ++root) {
        std::vector<int> at_root = mg::to_vector(v, root);
        EXPECT_EQ(at_root, t.rank() == root ? expected : std::vector<int>{}) << "root " << root;
      }
      mg::team_vector<long long> squares(t, v.local_size(), g);
      mg::transform(v, squares, square{});
      std::vector<long long> expected_squares;
      for (int x : expected) expected_squares.push_back(static_cast<long long>(x) * x);
      EXPECT_EQ(mg::to_vector(squares), expected_squares);
      mg::fill(v, 42);
      EXPECT_EQ(mg::to_vector(v), std::vector<int>(v.size(), 42));
    }
}

TEST(TeamVector, ReduceBuiltInAndRankOrdered) {
  mg::team t = world();
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g));
      auto v = make<int>(t, l, g, value_int);
      const auto host = reference<int>(v.size(), value_int);
      EXPECT_EQ(mg::reduce(v), std::accumulate(host.begin(), host.end(), 0));
      EXPECT_EQ(mg::reduce(v, 5, cuda::std::plus<>{}), std::accumulate(host.begin(), host.end(), 5));
      EXPECT_EQ(mg::reduce(v, 1000, cuda::maximum<>{}), std::max(1000, host.empty() ? 1000 : *std::max_element(host.begin(), host.end())));
      EXPECT_EQ(mg::reduce(v, 1000, cuda::minimum<>{}), std::min(1000, host.empty() ? 1000 : *std::min_element(host.begin(), host.end())));

      auto m = make<mat2>(t, l, g, value_mat);
      const auto host_m = reference<mat2>(m.size(), value_mat);
      const mat2 start{3, 1, 4, 1};
      EXPECT_EQ(mg::reduce(m, start, mat_mul{}), std::accumulate(host_m.begin(), host_m.end(), start, mat_mul{}));
      EXPECT_EQ(mg::reduce(m, identity, mat_mul{}), std::accumulate(host_m.begin(), host_m.end(), identity, mat_mul{}));
    }
}

// As std::reduce, the team reduce accumulates in init's type, across ranks too: ints whose sum
// is far past int, with 0LL (the engine's all_reduce in long long) and with an operator
// not known commutative (rank order, on the host), and ints with 0.5.
int value_big(std::size_t i) { return (1 << 30) - static_cast<int>(i % 3); }
struct long_long_plus {
  __host__ __device__ long long operator()(long long a, long long b) const { return a + b; }
};

TEST(TeamVector, ReduceAccumulatesInTheTypeOfInit) {
  mg::team t = world();
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g));
      auto v = make<int>(t, l, g, value_big);
      const auto host = reference<int>(v.size(), value_big);
      const long long want = std::accumulate(host.begin(), host.end(), 7LL);
      static_assert(std::is_same_v<decltype(mg::reduce(v, 7LL)), long long>);
      EXPECT_EQ(mg::reduce(v, 7LL), want);
      EXPECT_EQ(mg::reduce(v, 7LL, long_long_plus{}), want);
      auto small = make<int>(t, l, g, value_int);
      const auto host_small = reference<int>(small.size(), value_int);
      EXPECT_EQ(mg::reduce(small, 0.5), std::accumulate(host_small.begin(), host_small.end(), 0.5));
    }
}

TEST(TeamVector, ScansCarryAcrossRanks) {
  mg::team t = world();
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g));
      auto v = make<int>(t, l, g, value_int);
      const auto host = reference<int>(v.size(), value_int);
      mg::team_vector<int> out(t, v.local_size(), g);
      std::vector<int> expected(host.size());
      mg::inclusive_scan(v, out);
      std::inclusive_scan(host.begin(), host.end(), expected.begin());
      EXPECT_EQ(mg::to_vector(out), expected);
      mg::exclusive_scan(v, out, 7);
      std::exclusive_scan(host.begin(), host.end(), expected.begin(), 7);
      EXPECT_EQ(mg::to_vector(out), expected);
      mg::inclusive_scan(v, v, cuda::maximum<>{});  // in place
      std::inclusive_scan(host.begin(), host.end(), expected.begin(), [](int a, int b) { return std::max(a, b); });
      EXPECT_EQ(mg::to_vector(v), expected);

      auto m = make<mat2>(t, l, g, value_mat);
      const auto host_m = reference<mat2>(m.size(), value_mat);
      mg::team_vector<mat2> out_m(t, m.local_size(), g);
      std::vector<mat2> expected_m(host_m.size());
      mg::inclusive_scan(m, out_m, mat_mul{});
      std::inclusive_scan(host_m.begin(), host_m.end(), expected_m.begin(), mat_mul{});
      EXPECT_EQ(mg::to_vector(out_m), expected_m);
      const mat2 start{2, 0, 1, 1};
      mg::exclusive_scan(m, out_m, start, mat_mul{});
      std::exclusive_scan(host_m.begin(), host_m.end(), expected_m.begin(), start, mat_mul{});
      EXPECT_EQ(mg::to_vector(out_m), expected_m);
    }
}

TEST(TeamVector, CountAndExtremaWithGlobalIndices) {
  mg::team t = world();
  // Few distinct values: ties everywhere, and the first one must win.
  auto coarse = [](std::size_t i) { return static_cast<int>((i * 37u) % 11u); };
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g));
      auto v = make<int>(t, l, g, coarse);
      const auto host = reference<int>(v.size(), coarse);
      EXPECT_EQ(mg::count(v, 3), static_cast<std::size_t>(std::count(host.begin(), host.end(), 3)));
      EXPECT_EQ(mg::count_if(v, is_even{}),
                static_cast<std::size_t>(std::count_if(host.begin(), host.end(), [](int x) { return x % 2 == 0; })));
      auto min = mg::min_element(v);
      auto max = mg::max_element(v);
      if (host.empty()) {
        EXPECT_FALSE(min);
        EXPECT_FALSE(max);
        continue;
      }
      ASSERT_TRUE(min && max);
      EXPECT_EQ(min->index, static_cast<std::size_t>(std::min_element(host.begin(), host.end()) - host.begin()));
      EXPECT_EQ(min->value, *std::min_element(host.begin(), host.end()));
      EXPECT_EQ(max->index, static_cast<std::size_t>(std::max_element(host.begin(), host.end()) - host.begin()));
      EXPECT_EQ(max->value, *std::max_element(host.begin(), host.end()));
      auto last_min = mg::max_element(v, cuda::std::greater<>{});  // the first largest by >: first minimum
      EXPECT_EQ(last_min->index, min->index);
    }
}

TEST(TeamVector, RedistributeAndEqualAcrossLayouts) {
  mg::team t = world();
  const auto& all = layouts();
  for (const mg::device_group& g : groups())
    for (const layout& a : all)
      for (const layout& b : all) {
        SCOPED_TRACE(describe(a, g) + " to " + b.name);
        auto from = make<int>(t, a, g, value_int);
        mg::team_vector<int> to(t, b.local_size(t.rank(), t.size()), g);
        if (from.size() != to.size()) {
          EXPECT_THROW(mg::redistribute(from, to), std::invalid_argument);
          EXPECT_FALSE(mg::equal(from, to));
          continue;
        }
        mg::redistribute(from, to);
        EXPECT_EQ(mg::to_vector(to), reference<int>(from.size(), value_int));
        EXPECT_TRUE(mg::equal(from, to));
        EXPECT_TRUE(mg::equal(to, from));
        if (to.size() > 0) {
          // One element differs, on whichever rank holds it.
          const std::size_t i = to.size() / 2;
          if (i >= to.offset() && i < to.offset() + to.local_size()) to.local().write(i - to.offset(), 12345);
          EXPECT_FALSE(mg::equal(from, to));
          EXPECT_FALSE(mg::equal(to, from));
        }
      }
}

TEST(TeamVector, HalosAcrossRanks) {
  mg::team t = world();
  // Every non-empty local segment holds at least 2 elements (two slots split each rank).
  const std::vector<layout> halo_layouts{
      {"primes", [](int r, int) { const std::size_t p[] = {7, 13, 5, 31, 11}; return p[r % 5]; }},
      {"gaps", [](int r, int) { return std::size_t(r % 2 == 1 ? 0 : 11 + 2 * r); }},
      {"all on the last rank", [](int r, int n) { return std::size_t(r == n - 1 ? 17 : 0); }},
  };
  for (const layout& l : halo_layouts)
    for (const mg::device_group& g : groups())
      for (std::size_t width : {1u, 2u})
        for (bool periodic : {false, true}) {
          SCOPED_TRACE(describe(l, g) + ", width " + std::to_string(width) + (periodic ? ", periodic" : ""));
          mg::team_vector<int> v(t, l.local_size(t.rank(), t.size()), g, mg::halo{width, periodic});
          std::vector<int> mine(v.local_size());
          for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = value_int(v.offset() + i);
          mg::detail::vector_access::upload(v.local(), 0, mine.data(), mine.size());
          mg::exchange_halos(v);
          v.local().group().synchronize();  // the local halo copies are ordered on the slot streams
          const std::size_t n = v.size();
          for (const auto& s : v.segments()) {
            if (s.empty()) continue;
            const std::size_t first = v.offset() + s.offset(), end = first + s.size();
            std::vector<int> left(width), right(width);
            mg::device_guard guard(s.device());
            ASSERT_EQ(cudaMemcpy(left.data(), s.data() - width, width * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
            ASSERT_EQ(cudaMemcpy(right.data(), s.data() + s.size(), width * sizeof(int), cudaMemcpyDeviceToHost),
                      cudaSuccess);
            for (std::size_t k = 0; k < width; ++k) {
              if (first >= width || periodic)
                EXPECT_EQ(left[k], value_int((first + n - width + k) % n)) << "left halo of global " << first;
              if (end + width <= n || periodic)
                EXPECT_EQ(right[k], value_int((end + k) % n)) << "right halo after global " << end;
            }
          }
        }
}

// A vector from another team, and communicators of different sizes: std::invalid_argument
// on every rank before any communication.
TEST(TeamVector, OperandsFromOtherTeams) {
  mg::team t = world(), other = world();
  const auto g = groups()[0];
  auto a = mg::team_vector<int>::block(t, 10, g);
  auto b = mg::team_vector<int>::block(other, 10, g);
  EXPECT_THROW(mg::equal(a, b), std::invalid_argument);
  EXPECT_THROW(mg::redistribute(a, b), std::invalid_argument);
  EXPECT_THROW(mg::inclusive_scan(a, b), std::invalid_argument);
  if (world_size() < 2) return;
  // Rank 0 alone, the others together: teams of different sizes.
  MPI_Comm split;
  ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, world_rank() == 0 ? 0 : 1, world_rank(), &split), MPI_SUCCESS);
  {
    mg::team part(std::make_shared<mg::mpi_communicator>(split));
    auto c = mg::team_vector<int>::block(part, 10, g);
    try {
      mg::equal(a, c);
      ADD_FAILURE() << "equal over teams of different sizes did not throw";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("different sizes"), std::string::npos) << e.what();
    }
  }
  MPI_Comm_free(&split);
}

// A rank that calls another collective: every rank gets comm_error, nobody hangs, and the
// team stays usable.
TEST(TeamVector, MismatchedCollectivesAreDetected) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  expect_mismatch_detected(world());
}

// A precondition that fails on one rank only (a local segment smaller than the halo) fails
// the collective on every rank: the failing rank's own exception, comm_error elsewhere.
TEST(TeamVector, OneRanksLocalFailureReachesAll) {
  mg::team t = world();
  const int d = test_device();
  // Rank 0 splits its 3 elements over two slots (2 + 1): too small for width 2.
  mg::device_group g = t.rank() == 0 ? mg::device_group({d, d}) : mg::device_group({d});
  mg::team_vector<int> v(t, 3, g, mg::halo{2, false});
  if (t.rank() == 0) EXPECT_THROW(mg::exchange_halos(v), std::invalid_argument);
  else EXPECT_THROW(mg::exchange_halos(v), mg::comm_error);
  EXPECT_EQ(mg::count(v, 0), 3u * static_cast<std::size_t>(t.size()));  // still in step
}

TEST(TeamVector, BlockSizesMustAgree) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  mg::team t = world();
  EXPECT_THROW(mg::team_vector<int>::block(t, t.rank() == 0 ? 10 : 11, groups()[0]), std::invalid_argument);
}

TEST(TeamVector, InProcessTeam) {
  mg::team t = mg::team::in_process();
  auto v = mg::team_vector<mat2>::block(t, 1000, groups()[1]);
  std::vector<mat2> host = reference<mat2>(1000, value_mat);
  mg::detail::vector_access::upload(v.local(), 0, host.data(), host.size());
  EXPECT_EQ(mg::reduce(v, identity, mat_mul{}), std::accumulate(host.begin(), host.end(), identity, mat_mul{}));
  EXPECT_EQ(mg::to_vector(v), host);
  // One slot, on the device path (automatic would take the host path for parts this small):
  // redistribute hands device memory to the in-process communicator, whose copy must be done
  // before the call returns (read at once, the source freed at once).
  t.set_exchange(mg::exchange_path::device);
  auto w = mg::team_vector<mat2>::block(t, 1000, groups()[0]);
  {
    auto u = mg::team_vector<mat2>::block(t, 1000, groups()[0]);
    mg::detail::vector_access::upload(u.local(), 0, host.data(), host.size());
    ASSERT_TRUE(mg::detail::exchange_on_device(t, u.local(), w.local()));
    mg::redistribute(u, w);
  }
  EXPECT_EQ(mg::to_vector(w.local()), host);
}

#if MULTIGPU_HAS_NCCL
// NCCL with one rank (one GPU per rank): the team algorithms over the NCCL communicator,
// with two local slots.
TEST(TeamVector, OverNcclWithOneRank) {
  if (world_size() > 1) GTEST_SKIP() << "NCCL needs one GPU per rank; run with mpirun -np 1";
  mg::mpi_communicator bootstrap;
  mg::team t(std::make_shared<mg::nccl_communicator>(bootstrap, test_device()));
  for (const layout& l : layouts()) {
    SCOPED_TRACE(l.name);
    auto v = make<int>(t, l, groups()[1], value_int);
    const auto host = reference<int>(v.size(), value_int);
    EXPECT_EQ(mg::reduce(v), std::accumulate(host.begin(), host.end(), 0));
    auto m = make<mat2>(t, l, groups()[1], value_mat);
    const auto host_m = reference<mat2>(m.size(), value_mat);
    mg::team_vector<mat2> out(t, m.local_size(), groups()[1]);
    std::vector<mat2> expected(host_m.size());
    mg::inclusive_scan(m, out, mat_mul{});
    std::inclusive_scan(host_m.begin(), host_m.end(), expected.begin(), mat_mul{});
    EXPECT_EQ(mg::to_vector(out), expected);
    EXPECT_EQ(mg::count(v, value_int(0)),
              static_cast<std::size_t>(std::count(host.begin(), host.end(), value_int(0))));
    // One slot on the communicator's device, on the device path (automatic would take the host
    // path for parts this small): redistribute goes device to device through NCCL.
    t.set_exchange(mg::exchange_path::device);
    auto a = make<int>(t, l, groups()[0], value_int);
    auto b = mg::team_vector<int>::block(t, a.size(), groups()[0]);
    EXPECT_TRUE(mg::detail::exchange_on_device(t, a.local(), b.local()));
    mg::redistribute(a, b);
    EXPECT_EQ(mg::to_vector(b), host);
  }
}
#endif
