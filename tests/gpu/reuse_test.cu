// Repeated calls reuse pool memory: the pools' peak usage is flat over 100 calls of each
// algorithm (10 calls of smaller vectors under MULTIGPU_TEST_SMALL), and nothing stays
// allocated afterwards.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <functional>

namespace {

using namespace test;

struct negate {
  __host__ __device__ float operator()(float x) const { return -x; }
};
struct halve {
  __host__ __device__ void operator()(float& x) const { x *= 0.5f; }
};

TEST(PoolReuse, PeakUsageIsFlatOverHundredCalls) {
  for (std::size_t shape : {std::size_t{1}, std::size_t{3}}) {
    const auto& s = shapes()[shape];
    SCOPED_TRACE(s.name);
    const std::size_t n = small_run() ? 30011 : 3000017;
    const int repeats = small_run() ? 10 : 100;
    mg::distributed_vector<float> a(random_vector<float>(n), s.group), b(n, s.group), c(n, s.group);
    mg::distributed_vector<affine> f(random_vector<affine>(100003), s.group), h(100003, s.group);
    std::vector<std::pair<const char*, std::function<void()>>> calls{
        {"fill", [&] { mg::fill(b, 2.0f); }},
        {"iota", [&] { mg::iota(b, 0.0f); }},
        {"for_each", [&] { mg::for_each(c, halve{}); }},
        {"transform", [&] { mg::transform(a, c, negate{}); }},
        {"transform binary", [&] { mg::transform(a, b, c, cuda::std::plus<>{}); }},
        {"reduce", [&] { (void)mg::reduce(a); }},
        {"reduce ordered", [&] { (void)mg::reduce(f, affine{1, 0}, compose{}); }},
        {"dot", [&] { (void)mg::dot(a, b); }},
        {"count", [&] { (void)mg::count(a, 0.5f); }},
        {"min_element", [&] { (void)mg::min_element(a); }},
        {"equal", [&] { (void)mg::equal(a, b); }},
        {"inclusive_scan", [&] { mg::inclusive_scan(a, c); }},
        {"exclusive_scan", [&] { mg::exclusive_scan(a, c, 1.0f); }},
        {"scan ordered", [&] { mg::inclusive_scan(f, h, compose{}); }},
        {"copy", [&] { mg::copy(a, b); }},
    };
    auto& pool = s.group.pool(0);
    auto& staging = mg::detail::resources_of(s.group).staging();
    for (auto& [name, call] : calls) {
      SCOPED_TRACE(name);
      call();  // first call: pools and staging grow to what this algorithm needs
      s.group.synchronize();
      pool.reset_peak();
      const auto used = pool.usage().used_bytes;
      const auto reserved = pool.usage().reserved_bytes;
      const auto pinned = staging.held_bytes();
      call();
      s.group.synchronize();
      const auto peak_one = pool.usage().peak_used_bytes;
      for (int i = 0; i < repeats; ++i) call();
      s.group.synchronize();
      const auto after = pool.usage();
      EXPECT_EQ(after.peak_used_bytes, peak_one) << "peak grew over " << repeats << " calls";
      EXPECT_EQ(after.used_bytes, used) << "memory left allocated";
      EXPECT_EQ(after.reserved_bytes, reserved) << "the pool mapped new memory instead of reusing";
      EXPECT_EQ(staging.held_bytes(), pinned) << "pinned staging grew";
    }
  }
}

}  // namespace
