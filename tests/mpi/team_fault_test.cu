// A failure on one rank ends a team call on every rank. Fault injection
// (testing::fault_injection at fault_site::team_step) makes the k-th rank-local step of a team
// call throw on one rank; for every team algorithm, every step k and every rank, the test
// checks that:
// - the failing rank throws its own error (multigpu::out_of_memory, "injected fault");
// - every other rank throws comm_error naming the failing rank;
// - the last rank's exception comes within 2 s of the call's start (no rank waits for a
//   timeout);
// - the team stays usable: the same call then gives the right result.
// Built with multigpu_testing (MULTIGPU_TESTING), under mpirun with 1 to 3 ranks.

#include "support.hpp"
#include "team_support.hpp"

#include <multigpu/team/team_algorithms.hpp>
#include <multigpu/team/team_mdarray.hpp>
#include <multigpu/testing/fault_injection.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace mg = multigpu;
using namespace mg_test;

namespace {

/// A team whose calls give up after 20 s: a hang fails the test instead of ctest's timeout.
mg::team quick_team() {
  auto comm = std::make_shared<mg::mpi_communicator>();
  comm->set_timeout(std::chrono::seconds(20));
  return mg::team(comm);
}

/// How one rank's call ended.
struct outcome {
  int kind = 0;  // 0: returned, 1: its own injected fault, 2: comm_error, 3: anything else
  std::string message;
  double seconds = 0;
};

outcome attempt(const std::function<void()>& call) {
  outcome o;
  const auto start = std::chrono::steady_clock::now();
  try {
    call();
  } catch (const mg::comm_error& e) {
    o.kind = 2;
    o.message = e.what();
  } catch (const mg::out_of_memory& e) {
    o.kind = std::string(e.what()).find("injected fault") != std::string::npos ? 1 : 3;
    o.message = e.what();
  } catch (const std::exception& e) {
    o.kind = 3;
    o.message = e.what();
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

/// One team algorithm: `run` makes the call on inputs made beforehand by `prepare`, and
/// `check` (after a run without faults) compares its result with the host.
struct team_case {
  std::string name;
  std::function<void()> prepare, run, check;
};

double max_over_ranks(double x) {
  double m = x;
  MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}
long long max_over_ranks(long long x) {
  long long m = x;
  MPI_Allreduce(&x, &m, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

/// Every step of every rank, then a clean run.
void exercise(const team_case& c) {
  mg::testing::fault_injection faults;
  const int me = world_rank(), ranks = world_size();
  // Count the steps: a clean run with the injection off.
  c.prepare();
  faults.arm(mg::fault_site::team_step, 0);
  c.run();
  const long long steps = max_over_ranks(static_cast<long long>(faults.events(mg::fault_site::team_step)));
  ASSERT_GT(steps, 0) << c.name << ": no team step seen";
  double slowest = 0;
  for (long long k = 1; k <= steps; ++k)
    for (int failing = 0; failing < ranks; ++failing) {
      c.prepare();
      faults.arm(mg::fault_site::team_step, me == failing ? static_cast<std::uint64_t>(k) : 0);
      const outcome o = attempt(c.run);
      faults.arm(mg::fault_site::team_step, 0);
      const std::string where = c.name + ", step " + std::to_string(k) + " of " + std::to_string(steps) +
                                " failing on rank " + std::to_string(failing) + ": ";
      // A step past this rank's last (ranks may count one fewer) fails nowhere: all return.
      const long long fired = max_over_ranks(static_cast<long long>(o.kind));
      if (fired == 0) continue;
      if (me == failing)
        EXPECT_EQ(o.kind, 1) << where << "expected its own injected fault, got: " << o.message;
      else {
        EXPECT_EQ(o.kind, 2) << where << "expected comm_error, got: " << o.message;
        EXPECT_NE(o.message.find("rank " + std::to_string(failing)), std::string::npos)
            << where << "the message does not name the failing rank: " << o.message;
      }
      const double last = max_over_ranks(o.seconds);
      EXPECT_LT(last, 2.0) << where << "the last rank's exception came after " << last << " s";
      slowest = std::max(slowest, last);
    }
  // The team is still usable: the same call, no fault, right result.
  c.prepare();
  c.run();
  c.check();
  if (me == 0)
    std::printf("%-34s %2lld steps x %d ranks: every rank ended every faulty call; slowest %.1f ms\n",
                c.name.c_str(), steps, ranks, 1e3 * slowest);
}

struct four_neighbours {
  __device__ int operator()(const mg::stencil_accessor<int, 2>& u) const { return u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1); }
};

struct positive {
  __host__ __device__ bool operator()(int x) const { return x > 0; }
};
struct multiple_of_3 {
  __host__ __device__ bool operator()(int x) const { return x % 3 == 0; }
};

int key_of(std::size_t i) { return static_cast<int>((i * 2654435761u) % 1009u) - 500; }

TEST(TeamFaults, EveryAlgorithmEndsOnEveryRank) {
  mg::team t = quick_team();
  const int d = test_device();
  const mg::device_group one({d});
  const int me = t.rank(), ranks = t.size();
  const std::size_t local = 1000 + 37 * static_cast<std::size_t>(me);
  std::optional<mg::team_vector<int>> v, w, map, out;
  std::optional<mg::team_vector<std::uint64_t>> vals;
  std::size_t n = 0;
  auto fill = [&](mg::team_vector<int>& x, auto f) {
    std::vector<int> h(x.local_size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = f(x.offset() + i);
    mg::detail::vector_access::upload(x.local(), 0, h.data(), h.size());
  };
  // The shared inputs: v (keys, uneven), w (the same values in even blocks).
  auto keys = [&] {
    v.emplace(t, local, one);
    fill(*v, key_of);
    n = v->size();
  };
  // The exchange paths: each one on every rank, and rank 0 through host memory while the
  // others go device to device (the paths make the same calls, so ranks may differ).
  enum class paths { device, host, mixed };
  auto use = [&](paths p) {
    const bool host = p == paths::host || (p == paths::mixed && me == 0);
    t.set_exchange(host ? mg::exchange_path::host : mg::exchange_path::device);
  };
  auto keys_on_device_path = [&] {
    use(paths::device);
    keys();
  };
  auto host_keys = [&] {
    std::vector<int> h(n);
    for (std::size_t i = 0; i < n; ++i) h[i] = key_of(i);
    return h;
  };
  std::optional<int> sum;
  std::optional<std::size_t> counted, bound;
  std::optional<bool> same;
  std::vector<int> gathered;
  std::optional<mg::team_vector<int>> result;

  std::vector<team_case> cases;
  cases.push_back({"reduce", keys_on_device_path, [&] { sum = mg::reduce(*v, 0); },
                   [&] { auto h = host_keys(); EXPECT_EQ(*sum, std::accumulate(h.begin(), h.end(), 0)); }});
  cases.push_back({"inclusive_scan", keys_on_device_path, [&] { mg::inclusive_scan(*v, *v); },
                   [&] {
                     auto h = host_keys();
                     std::inclusive_scan(h.begin(), h.end(), h.begin());
                     EXPECT_EQ(mg::to_vector(*v), h);
                   }});
  cases.push_back({"count_if", keys_on_device_path, [&] { counted = mg::count_if(*v, positive{}); },
                   [&] {
                     auto h = host_keys();
                     EXPECT_EQ(*counted, static_cast<std::size_t>(std::count_if(h.begin(), h.end(), [](int x) { return x > 0; })));
                   }});
  cases.push_back({"min_element", keys_on_device_path, [&] { sum = mg::min_element(*v)->value; },
                   [&] { auto h = host_keys(); EXPECT_EQ(*sum, *std::min_element(h.begin(), h.end())); }});
  cases.push_back({"to_vector", keys_on_device_path, [&] { gathered = mg::to_vector(*v); }, [&] { EXPECT_EQ(gathered, host_keys()); }});
  cases.push_back({"to_vector at the last rank", keys_on_device_path, [&] { gathered = mg::to_vector(*v, ranks - 1); },
                   [&] { EXPECT_EQ(gathered, me == ranks - 1 ? host_keys() : std::vector<int>{}); }});
  for (const paths path : {paths::device, paths::host, paths::mixed}) {
    const std::string how = path == paths::host ? " (host path)" : path == paths::device ? " (device path)" : " (mixed paths)";
    cases.push_back({"redistribute" + how,
                     [&, path] {
                       use(path);
                       keys();
                       w.emplace(mg::team_vector<int>::block(t, n, one));
                     },
                     [&] { mg::redistribute(*v, *w); }, [&] { EXPECT_EQ(mg::to_vector(*w), host_keys()); }});
    cases.push_back({"sort" + how,
                     [&, path] {
                       use(path);
                       keys();
                     },
                     [&] { mg::sort(*v); },
                     [&] {
                       auto h = host_keys();
                       std::stable_sort(h.begin(), h.end());
                       EXPECT_EQ(mg::to_vector(*v), h);
                     }});
    cases.push_back({"sort_by_key" + how,
                     [&, path] {
                       use(path);
                       keys();
                       vals.emplace(t, local, one);
                       std::vector<std::uint64_t> h(local);
                       std::iota(h.begin(), h.end(), std::uint64_t{vals->offset()});
                       mg::detail::vector_access::upload(vals->local(), 0, h.data(), h.size());
                     },
                     [&] { mg::sort_by_key(*v, *vals); },
                     [&] {
                       auto h = host_keys();
                       std::vector<std::uint64_t> order(n);
                       std::iota(order.begin(), order.end(), std::uint64_t{0});
                       std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return h[a] < h[b]; });
                       EXPECT_EQ(mg::to_vector(*vals), order);
                     }});
  }
  cases.push_back({"equal across layouts",
                   [&] {
                     keys_on_device_path();
                     w.emplace(mg::team_vector<int>::block(t, n, one));
                     fill(*w, key_of);
                   },
                   [&] { same = mg::equal(*v, *w); }, [&] { EXPECT_TRUE(*same); }});
  cases.push_back({"lower_bound",
                   [&] {
                     use(paths::device);
                     v.emplace(t, local, one);
                     mg::iota(*v, 0);
                     n = v->size();
                   },
                   [&] { bound = mg::lower_bound(*v, 1500); },
                   [&] { EXPECT_EQ(*bound, std::min<std::size_t>(n, 1500)); }});
  cases.push_back({"gather",
                   [&] {
                     keys_on_device_path();
                     map.emplace(t, local, one);
                     fill(*map, [&](std::size_t i) { return static_cast<int>((i * 7919) % n); });
                     out.emplace(t, local, one);
                   },
                   [&] { mg::gather(*map, *v, *out); },
                   [&] {
                     auto h = host_keys();
                     std::vector<int> expected(n);
                     for (std::size_t i = 0; i < n; ++i) expected[i] = h[(i * 7919) % n];
                     EXPECT_EQ(mg::to_vector(*out), expected);
                   }});
  cases.push_back({"scatter",
                   [&] {
                     keys_on_device_path();
                     map.emplace(t, local, one);
                     fill(*map, [&](std::size_t i) { return static_cast<int>(n - 1 - i); });  // a permutation
                     out.emplace(mg::team_vector<int>::block(t, n, one));
                   },
                   [&] { mg::scatter(*v, *map, *out); },
                   [&] {
                     auto h = host_keys();
                     std::reverse(h.begin(), h.end());
                     EXPECT_EQ(mg::to_vector(*out), h);
                   }});
  cases.push_back({"copy_if then rebalance", keys_on_device_path,
                   [&] {
                     auto kept = mg::copy_if(*v, multiple_of_3{});
                     result.emplace(mg::rebalance(kept));
                   },
                   [&] {
                     auto h = host_keys();
                     std::vector<int> expected;
                     std::copy_if(h.begin(), h.end(), std::back_inserter(expected), [](int x) { return x % 3 == 0; });
                     EXPECT_EQ(mg::to_vector(*result), expected);
                   }});
  cases.push_back({"exchange_halos",
                   [&] {
                     use(paths::device);
                     v.emplace(t, local, one, mg::halo{2, true});
                     fill(*v, key_of);
                   },
                   [&] { mg::exchange_halos(*v); },
                   [&] {
                     // The left halo of this rank's segment holds the two elements before it.
                     const std::size_t total = v->size();
                     int left[2];
                     const mg::segment_view<int> s = v->local().segment(0);
                     MULTIGPU_CUDA_TRY(cudaMemcpy(left, s.data() - 2, sizeof left, cudaMemcpyDeviceToHost));
                     EXPECT_EQ(left[0], key_of((v->offset() + total - 2) % total));
                     EXPECT_EQ(left[1], key_of((v->offset() + total - 1) % total));
                   }});
  // N-D arrays over the team: construction, a stencil (its exchange), a reduction, to_host.
  const mg::md_index<2> md_extents{23, 17};
  std::vector<int> md_host(md_extents[0] * md_extents[1]);
  for (std::size_t k = 0; k < md_host.size(); ++k) md_host[k] = key_of(k);
  mg::team_mdarray_options<int, 2> md_options;
  md_options.halo = {1, 1};
  md_options.boundaries = {{{mg::boundary_kind::periodic}, {mg::boundary_kind::periodic}}};
  std::optional<mg::team_mdarray<int, 2>> md_in, md_out;
  auto md_inputs = [&] {
    md_in.emplace(t, md_extents, std::span<const int>(md_host), one, md_options);
    md_out.emplace(t, md_extents, 0, one, md_in->options());
  };
  cases.push_back({"team_mdarray construction", [&] { md_in.reset(); },
                   [&] { md_in.emplace(t, md_extents, std::span<const int>(md_host), one, md_options); },
                   [&] { EXPECT_EQ(md_in->to_host(), md_host); }});
  cases.push_back({"team_mdarray stencil_transform", md_inputs,
                   [&] { mg::stencil_transform(*md_in, *md_out, four_neighbours{}); },
                   [&] {
                     const auto at = [&](std::size_t i, std::size_t j) { return md_host[i * md_extents[1] + j]; };
                     std::vector<int> want(md_host.size());
                     const std::size_t rows = md_extents[0], cols = md_extents[1];
                     for (std::size_t i = 0; i < rows; ++i)
                       for (std::size_t j = 0; j < cols; ++j)
                         want[i * cols + j] = at((i + rows - 1) % rows, j) + at((i + 1) % rows, j) +
                                              at(i, (j + cols - 1) % cols) + at(i, (j + 1) % cols);
                     EXPECT_EQ(md_out->to_host(), want);
                   }});
  cases.push_back({"team_mdarray reduce", md_inputs, [&] { sum = mg::reduce(*md_in, 0); },
                   [&] { EXPECT_EQ(sum, std::accumulate(md_host.begin(), md_host.end(), 0)); }});
  cases.push_back({"team_mdarray to_host", md_inputs, [&] { gathered = md_in->to_host(); },
                   [&] { EXPECT_EQ(gathered, md_host); }});
  cases.push_back({"team_mdarray exchange_halos", md_inputs, [&] { mg::exchange_halos(*md_in); },
                   [&] {
                     // The stencil reads the halos the exchange filled: the same sums as above.
                     mg::stencil_transform(*md_in, *md_out, four_neighbours{}, mg::stencil_schedule::exchange_first);
                     EXPECT_EQ(mg::reduce(*md_out, 0), 4 * std::accumulate(md_host.begin(), md_host.end(), 0));
                   }});
  cases.push_back({"team_mdarray copy to pencils", md_inputs,
                   [&] {
                     mg::team_mdarray_options<int, 2> pencils;
                     pencils.rank_grid = {1, static_cast<std::size_t>(ranks)};
                     md_out.emplace(t, md_extents, 0, one, pencils);
                     mg::copy(*md_in, *md_out);
                   },
                   [&] { EXPECT_EQ(md_out->to_host(), md_host); }});
  std::optional<mg::replicated<int>> md_sum;
  cases.push_back({"team_mdarray reduce_replicated",
                   [&] {
                     md_inputs();
                     md_sum.emplace(one, -1);
                   },
                   [&] { mg::reduce_replicated(*md_in, 0, cuda::std::plus<>{}, *md_sum); },
                   [&] { EXPECT_EQ(md_sum->get(0), std::accumulate(md_host.begin(), md_host.end(), 0)); }});
  cases.push_back({"team_mdarray get", md_inputs, [&] { sum = md_in->get({md_extents[0] - 1, md_extents[1] - 1}); },
                   [&] { EXPECT_EQ(sum, md_host.back()); }});
  for (const team_case& c : cases) {
    SCOPED_TRACE(c.name);
    exercise(c);
  }
}

}  // namespace
