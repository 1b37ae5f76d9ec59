// Halo exchange, stencils and the extension API (zipped segments, per-segment values).
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <cmath>

namespace {

using namespace test;

/// Reads a segment's whole storage, halos included.
template <class T>
std::vector<T> storage_of(const mg::segment_view<T>& seg) {
  std::vector<T> host(seg.size() + 2 * seg.halo());
  mg::device_guard guard(seg.device());
  EXPECT_EQ(cudaStreamSynchronize(seg.stream()), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), seg.data() - seg.halo(), host.size() * sizeof(T), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

std::vector<mg::device_group> halo_groups() {
  std::vector<mg::device_group> groups;
  for (std::size_t k = 1; k <= 7; ++k) groups.push_back(mg::device_group(std::vector<int>(k, 0)));
  groups.push_back(mg::device_group({0, 0, 0}, {mg::peer_policy::host_staged}));
  if (mg::visible_device_count() > 1) {
    groups.push_back(mg::device_group::all());
    groups.push_back(mg::device_group::all({mg::peer_policy::host_staged}));
  }
  return groups;
}

template <class T>
class Halo : public ::testing::Test {};
using halo_types = ::testing::Types<int, double, vec3>;
TYPED_TEST_SUITE(Halo, halo_types);

TYPED_TEST(Halo, ExchangeFillsHalosWithNeighbours) {
  using T = TypeParam;
  for (const auto& g : halo_groups())
    for (std::size_t width : {1u, 3u})
      for (bool periodic : {false, true})
        for (std::size_t n : {3 * g.size() + 1, std::size_t{1000}, std::size_t{100003}}) {
          SCOPED_TRACE(testing::Message() << g.size() << " slots, width " << width << (periodic ? " periodic" : "")
                                          << " n=" << n);
          auto host = random_vector<T>(n);
          mg::distributed_vector<T> v(n, mg::halo{width, periodic}, g);
          mg::copy(host.begin(), host.end(), v.begin());
          mg::exchange_halos(v);
          for (const auto& seg : v.segments()) {
            if (seg.empty()) continue;
            ASSERT_EQ(seg.halo(), width);
            auto got = storage_of(seg);
            for (std::size_t j = 0; j < got.size(); ++j) {
              const long long global = static_cast<long long>(seg.offset() + j) - static_cast<long long>(width);
              T want{};
              if (global >= 0 && global < static_cast<long long>(n))
                want = host[static_cast<std::size_t>(global)];
              else if (periodic)
                want = host[static_cast<std::size_t>((global + static_cast<long long>(n)) % static_cast<long long>(n))];
              ASSERT_TRUE(got[j] == want) << "slot " << seg.slot() << " storage position " << j << " (global "
                                          << global << ")";
            }
          }
          // Elements and algorithms ignore the halo.
          EXPECT_TRUE(same_elements(mg::to_vector(v), host));
        }
}

TEST(HaloErrors, SegmentsShorterThanTheHaloAreRejected) {
  mg::device_group g({0, 0, 0});
  mg::distributed_vector<int> v(7, mg::halo{3, false}, g);  // segments of 3, 2, 2
  try {
    mg::exchange_halos(v);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than the halo width 3"), std::string::npos) << e.what();
  }
  mg::distributed_vector<int> out(7, g), wide(9, mg::halo{3, false}, g);
  mg::exchange_halos(wide);  // 3, 3, 3: fine
  EXPECT_EQ(mg::reduce(wide), 0);
}

/// One explicit Euler step of the 1D heat equation, fixed ends unless periodic.
struct heat_step {
  double alpha;
  bool periodic;
  __host__ __device__ double operator()(const mg::stencil_window<double>& u) const {
    if (!periodic && (u.index() == 0 || u.index() + 1 == u.size())) return u[0];
    return u[0] + alpha * (u[-1] - 2 * u[0] + u[1]);
  }
};

std::vector<double> heat_reference(std::vector<double> u, double alpha, bool periodic, int steps) {
  const std::size_t n = u.size();
  std::vector<double> next(n);
  for (int t = 0; t < steps; ++t) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!periodic && (i == 0 || i + 1 == n)) {
        next[i] = u[i];
        continue;
      }
      const double left = u[(i + n - 1) % n], right = u[(i + 1) % n];
      next[i] = u[i] + alpha * (left - 2 * u[i] + right);
    }
    u.swap(next);
  }
  return u;
}

TEST(Stencil, HeatEquationMatchesTheHostAfterHundredSteps) {
  for (const auto& g : halo_groups())
    for (bool periodic : {false, true}) {
      SCOPED_TRACE(testing::Message() << g.size() << " slots" << (periodic ? ", periodic" : ""));
      const std::size_t n = 20011;
      auto initial = random_vector<double>(n);
      mg::distributed_vector<double> a(n, mg::halo{1, periodic}, g), b(n, mg::halo{1, periodic}, g);
      mg::copy(initial.begin(), initial.end(), a.begin());
      for (int t = 0; t < 100; ++t) {
        mg::stencil_transform(a, b, 1, heat_step{0.25, periodic});
        a.swap(b);
      }
      auto want = heat_reference(initial, 0.25, periodic, 100);
      auto got = mg::to_vector(a);
      for (std::size_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << "element " << i;
    }
}

TEST(Stencil, PreconditionsAreChecked) {
  mg::device_group g({0, 0});
  const auto initial = random_vector<double>(100);
  mg::distributed_vector<double> a(100, mg::halo{1}, g), b(100, -1.0, g), c(99, mg::halo{1}, g);
  mg::copy(initial.begin(), initial.end(), a.begin());
  mg::fill(c, -1.0);
  EXPECT_THROW(mg::stencil_transform(a, b, 2, heat_step{0.1, false}), std::invalid_argument);  // radius > halo
  EXPECT_THROW(mg::stencil_transform(a, a, 1, heat_step{0.1, false}), std::invalid_argument);  // in place
  EXPECT_THROW(mg::stencil_transform(a, c, 1, heat_step{0.1, false}), std::invalid_argument);  // lengths
  // Rejected calls wrote nothing, and the input is as it was.
  EXPECT_EQ(mg::count(b, -1.0), 100u);
  EXPECT_EQ(mg::count(c, -1.0), 99u);
  EXPECT_TRUE(same_elements(mg::to_vector(a), initial));
  // The accepted call computes the step (on data that makes a wrong answer visible).
  mg::stencil_transform(a, b, 1, heat_step{0.1, false});
  const auto want = heat_reference(initial, 0.1, false, 1);
  const auto got = mg::to_vector(b);
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << "element " << i;
}

__global__ void add_into(const int* a, const int* b, int* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = a[i] + b[i];
}

__global__ void count_negative(const int* x, std::size_t n, unsigned long long* out) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) mine += x[i] < 0;
  if (mine) atomicAdd(out, mine);
}

struct plus_u64 {
  __host__ __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const { return a + b; }
};

TEST(Extension, ZippedSegmentsAndPerSegmentValues) {
  for (const auto& s : shapes()) {
    SCOPED_TRACE(s.name);
    const std::size_t n = 100003;
    auto a = random_vector<int>(n), b = random_vector<int>(n);
    mg::distributed_vector<int> da(a, s.group), db(b, s.group), out(n, s.group);
    mg::for_each_segment(da, db, out, [](auto x, auto y, auto o) {
      add_into<<<128, 256, 0, x.stream()>>>(x.data(), y.data(), o.data(), x.size());
    });
    std::vector<int> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
    EXPECT_TRUE(same_elements(mg::to_vector(out), want));

    const unsigned long long negatives =
        mg::reduce_segments(da, 0ull, plus_u64{}, [](auto seg, unsigned long long* value) {
          ASSERT_EQ(cudaMemsetAsync(value, 0, sizeof(*value), seg.stream()), cudaSuccess);
          count_negative<<<64, 256, 0, seg.stream()>>>(seg.data(), seg.size(), value);
        });
    EXPECT_EQ(negatives, static_cast<unsigned long long>(std::count_if(a.begin(), a.end(), [](int x) { return x < 0; })));

    mg::distributed_vector<int> other(n + 1, s.group);
    EXPECT_THROW(mg::for_each_segment(da, other, [](auto, auto) {}), std::invalid_argument);
  }
}

}  // namespace
