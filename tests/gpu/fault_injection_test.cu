// Exceptions in the middle of a call, made by the fault_injection observer
// (multigpu/testing/fault_injection.hpp). For each algorithm and each n, the n-th pool allocation or staging
// acquisition of the call fails, or (on a group with worker threads) the n-th slot step run
// by a worker: the call must throw multigpu::out_of_memory (multigpu::cuda_error for a
// worker step), the pools'
// bytes in use must return to what they were, the output of a failed copy must be as it
// was, and the same call without the fault must then give the host reference's answer.
// n runs from 1 until the call needs fewer events than n, so every failure point is hit.
#include <multigpu/testing/fault_injection.hpp>
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <numeric>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

using namespace test;
using mg::fault_site;

struct triple {
  __host__ __device__ long long operator()(long long a) const { return 3 * a; }
};
struct plus_ll {
  __host__ __device__ long long operator()(long long a, long long b) const { return a + b; }
};
struct unknown_plus {  // not known to be commutative: the order-keeping reduction
  __host__ __device__ long long operator()(long long a, long long b) const { return a + b; }
};

std::size_t used_bytes(const mg::device_group& g) {
  g.synchronize();
  std::size_t total = 0;
  std::vector<int> seen;
  for (std::size_t s = 0; s < g.size(); ++s) {
    if (std::find(seen.begin(), seen.end(), g.device(s)) != seen.end()) continue;
    seen.push_back(g.device(s));
    total += g.pool(s).usage().used_bytes;
  }
  return total;
}

/// Runs `call` with the n-th event at `site` failing, for n = 1, 2, ... until it succeeds;
/// `check` then says whether the state is right (after a failure: unchanged outputs where
/// promised, then after a clean call: the right answer).
void fail_everywhere(const std::string& name, const mg::device_group& g, fault_site site,
                     const std::function<void()>& call, const std::function<void()>& check,
                     bool runs_on_workers = true) {
  SCOPED_TRACE(name);
  mg::testing::fault_injection faults;
  std::uint64_t failures = 0;
  for (std::uint64_t n = 1; n < 200; ++n) {
    const std::size_t before = used_bytes(g);
    faults.arm(site, n);
    bool threw = false;
    try {
      call();
    } catch (const std::exception& e) {
      const bool typed = site == fault_site::worker_step ? dynamic_cast<const mg::cuda_error*>(&e) != nullptr
                                                         : dynamic_cast<const mg::out_of_memory*>(&e) != nullptr;
      if (!typed) {
        faults.arm(site, 0);
        ADD_FAILURE() << "event " << n << ": threw " << typeid(e).name() << " instead of "
                      << (site == fault_site::worker_step ? "multigpu::cuda_error" : "multigpu::out_of_memory") << ": "
                      << e.what();
        return;
      }
      threw = true;
      EXPECT_NE(std::string(e.what()).find("injected fault"), std::string::npos) << e.what();
    }
    faults.arm(site, 0);
    if (!threw) {
      // Algorithms (not copies) run their per-slot steps through the group's dispatch: on
      // a group with worker threads, at least one of those steps must have been failed.
      if (site == fault_site::worker_step && runs_on_workers)
        EXPECT_GT(failures, 0u) << "no worker step ran: the call did not dispatch to the slots' workers";
      check();
      std::printf("%s: %llu failure points\n", name.c_str(), static_cast<unsigned long long>(failures));
      return;
    }
    ++failures;
    EXPECT_EQ(used_bytes(g), before) << "event " << n << " failed and the call left pool memory in use";
    call();  // the same call without a fault
    check();
    if (::testing::Test::HasFailure()) return;
  }
  ADD_FAILURE() << "the call still failed at its 200th event";
}

std::vector<long long> host_data(std::size_t n) {
  std::vector<long long> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<long long>(i * 7919 % 2003) - 1000;
  return v;
}

void run_all(const mg::device_group& g, const std::string& shape) {
  std::vector<fault_site> sites{fault_site::pool_allocation, fault_site::staging_acquisition};
  if (g.options().dispatch == mg::dispatch_policy::worker_threads) sites.push_back(fault_site::worker_step);
  const std::size_t n = small_run() ? 4099 : 100003;
  const std::vector<long long> data = host_data(n);
  mg::distributed_vector<long long> in(data, g);
  // An output with another layout (first element at index 7 of a longer vector) makes the
  // call stage its results in a temporary.
  mg::distributed_vector<long long> out(n + 7, g);
  mg::distributed_vector<long long> other(n, mg::device_group({0}));

  std::vector<long long> tripled(n), inclusive(n), exclusive(n);
  long long sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    tripled[i] = 3 * data[i];
    exclusive[i] = sum;
    sum += data[i];
    inclusive[i] = sum;
  }
  mg::distributed_vector<long long> keys(n, g), values(n, g);
  std::vector<long long> positions(n);
  std::iota(positions.begin(), positions.end(), 0LL);
  std::vector<long long> sorted_positions = positions;
  std::stable_sort(sorted_positions.begin(), sorted_positions.end(),
                   [&](long long a, long long b) { return data[a] < data[b]; });
  std::vector<long long> sorted(n);
  for (std::size_t i = 0; i < n; ++i) sorted[i] = data[sorted_positions[i]];
  auto tail_of_out = [&] {
    auto all = mg::to_vector(out);
    return std::vector<long long>(all.begin() + 7, all.end());
  };

  for (fault_site site : sites) {
    const std::string where = shape + (site == fault_site::pool_allocation       ? ", pool allocation"
                                       : site == fault_site::staging_acquisition ? ", staging"
                                                                                 : ", worker step");
    fail_everywhere("transform, " + where, g, site, [&] { mg::transform(in.cbegin(), in.cend(), out.begin() + 7, triple{}); },
                    [&] { EXPECT_TRUE(same_elements(tail_of_out(), tripled)); });
    fail_everywhere("inclusive_scan, " + where, g, site,
                    [&] { mg::inclusive_scan(in.cbegin(), in.cend(), out.begin() + 7, plus_ll{}); },
                    [&] { EXPECT_TRUE(same_elements(tail_of_out(), inclusive)); });
    fail_everywhere("exclusive_scan, " + where, g, site,
                    [&] { mg::exclusive_scan(in.cbegin(), in.cend(), out.begin() + 7, 0LL, plus_ll{}); },
                    [&] { EXPECT_TRUE(same_elements(tail_of_out(), exclusive)); });
    long long got = 0;
    // plus<> is known to be commutative (CUB's reduction); unknown_plus is not (the
    // order-keeping kernel).
    fail_everywhere("reduce, " + where, g, site, [&] { got = mg::reduce(in, 0LL); }, [&] { EXPECT_EQ(got, sum); });
    fail_everywhere("ordered reduce, " + where, g, site, [&] { got = mg::reduce(in, 0LL, unknown_plus{}); },
                    [&] { EXPECT_EQ(got, sum); });
    fail_everywhere("dot, " + where, g, site, [&] { got = mg::dot(in, in); }, [&] {
      long long want = 0;
      for (long long x : data) want += x * x;
      EXPECT_EQ(got, want);
    });
    // A failed sort leaves its vectors usable, their contents unspecified (each sort starts
    // from the data again); the radix path, then sort_by_key (values follow the keys).
    fail_everywhere("sort, " + where, g, site,
                    [&] {
                      mg::copy(data.begin(), data.end(), keys.begin());
                      mg::sort(keys);
                    },
                    [&] { EXPECT_EQ(mg::to_vector(keys), sorted); }, false);
    fail_everywhere("sort_by_key, " + where, g, site,
                    [&] {
                      mg::copy(data.begin(), data.end(), keys.begin());
                      mg::copy(positions.begin(), positions.end(), values.begin());
                      mg::sort_by_key(keys, values);
                    },
                    [&] {
                      EXPECT_EQ(mg::to_vector(keys), sorted);
                      EXPECT_EQ(mg::to_vector(values), sorted_positions);
                    },
                    false);
    // A failed copy leaves its target as it was.
    fail_everywhere("copy to another group, " + where, g, site,
                    [&] {
                      mg::fill(other, -1LL);
                      try {
                        mg::copy(in, other);
                      } catch (...) {
                        EXPECT_EQ(mg::count(other, -1LL), n) << "a failed copy changed its target";
                        throw;
                      }
                    },
                    [&] { EXPECT_TRUE(same_elements(mg::to_vector(other), data)); }, false);
    fail_everywhere("shift in place, " + where, g, site,
                    [&] {
                      mg::copy(data.begin(), data.end(), in.begin());
                      mg::copy(in.cbegin(), in.cend() - 1, in.begin() + 1);
                    },
                    [&] {
                      std::vector<long long> want = data;
                      std::copy_backward(data.begin(), data.end() - 1, want.end());
                      EXPECT_TRUE(same_elements(mg::to_vector(in), want));
                      mg::copy(data.begin(), data.end(), in.begin());
                    },
                    false);
  }
}

TEST(FaultInjection, EveryFailurePointThrowsCleansUpAndTheNextCallIsRight) {
  run_all(mg::device_group({0, 0, 0}), "{0,0,0}");
  run_all(mg::device_group({0, 0, 0}, {.dispatch = mg::dispatch_policy::worker_threads}), "{0,0,0} worker threads");
  run_all(mg::device_group({0, 0, 0}, {.dispatch = mg::dispatch_policy::graph}), "{0,0,0} graph");
  if (small_run()) return;  // under a sanitizer: the plain and the worker-thread shapes only
  run_all(mg::device_group({0, 0, 0}, {mg::peer_policy::host_staged}), "{0,0,0} host staged");
  run_all(mg::device_group({0, 0, 0}, {.merge = mg::merge_policy::device}), "{0,0,0} device merge");
  run_all(mg::device_group({0, 0, 0}, {.merge = mg::merge_policy::host_mapped,
                                       .dispatch = mg::dispatch_policy::worker_threads}),
          "{0,0,0} host-mapped merge, worker threads");
  if (mg::visible_device_count() > 1) run_all(mg::device_group::all(), "all devices");
}

}  // namespace
