// Host threads sharing device groups. The rule (distributed_vector.hpp): calls that only
// read a vector may run concurrently; a call that writes a vector needs external
// synchronisation against every other call on that vector; different vectors may be used
// from any threads at once, on the same group or not. Every thread keeps the current device
// it chose: the library restores it after each call.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <latch>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace mg = multigpu;

/// Eight threads, or MULTIGPU_TEST_THREADS (2 to 8): under racecheck, eight threads reading
/// one vector stopped in the tool ("Internal Sanitizer Error: Detected a failure to track a
/// kernel launch", then no progress), so the sanitizer runs can take fewer.
const int thread_count = [] {
  const std::uint64_t asked = test::env_or("MULTIGPU_TEST_THREADS", 8);
  return asked >= 2 && asked <= 8 ? static_cast<int>(asked) : 8;
}();

/// Rounds of each test. Under the sanitizers (MULTIGPU_TEST_SMALL) every test keeps its eight
/// threads and its mix of calls, but runs fewer rounds, and one under racecheck
/// (MULTIGPU_TEST_TINY): racecheck instruments every launch, and this binary did not finish
/// under it in 410 s with the small rounds.
int rounds(int full, int small) { return test::tiny_run() ? 1 : test::small_run() ? small : full; }

struct affine {
  __host__ __device__ long long operator()(long long x) const { return 3 * x + 1; }
};
struct increment {
  __host__ __device__ void operator()(long long& x) const { ++x; }
};
struct plus_one {
  __host__ __device__ long long operator()(long long x) const { return x + 1; }
};
struct positive {
  __host__ __device__ bool operator()(long long x) const { return x > 0; }
};

/// Collects the mismatches a thread finds (gtest assertions stay on the main thread).
class findings {
 public:
  explicit findings(int thread) : thread_(thread) {}
  template <class A, class B>
  void equal(const A& got, const B& want, const std::string& what) {
    if (got == want) return;
    std::ostringstream out;
    out << "thread " << thread_ << ": " << what << " gave " << describe(got) << ", expected " << describe(want) << "\n";
    text_ += out.str();
  }
  void add(const std::string& message) { text_ += "thread " + std::to_string(thread_) + ": " + message + "\n"; }
  const std::string& text() const { return text_; }

 private:
  template <class X>
  static std::string describe(const X& x) {
    if constexpr (requires(std::ostream& o) { o << x; }) {
      std::ostringstream out;
      out << x;
      return out.str();
    } else {
      return "a vector of " + std::to_string(x.size()) + " elements";
    }
  }
  int thread_;
  std::string text_;
};

/// Runs body(thread, findings&) on `thread_count` threads released together. Each thread
/// first makes a device of its own current (t modulo the device count) and must find it
/// current again at the end. Returns every thread's findings.
/// MULTIGPU_TEST_SERIAL_THREADS=1 runs the bodies one at a time (still each on its own
/// thread, on the same groups and vectors): for racecheck, which checks each kernel's
/// shared memory whatever the host threads do, and whose launch tracking failed with
/// several threads launching at once. The other tools and the plain runs keep them together.
template <class Body>
std::string run_threads(Body&& body) {
  const int devices = mg::visible_device_count();
  const bool serial = test::env_flag("MULTIGPU_TEST_SERIAL_THREADS");
  std::mutex one_at_a_time;
  std::vector<std::string> reports(thread_count);
  std::latch start(thread_count);
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t)
    threads.emplace_back([&, t] {
      findings found(t);
      const int device = t % devices;
      try {
        if (cudaSetDevice(device) != cudaSuccess) throw std::runtime_error("cudaSetDevice failed");
        start.arrive_and_wait();
        std::unique_lock<std::mutex> turn(one_at_a_time, std::defer_lock);
        if (serial) turn.lock();
        body(t, found);
      } catch (const std::exception& e) {
        found.add(std::string("threw ") + e.what());
      }
      int now = -1;
      if (cudaGetDevice(&now) != cudaSuccess || now != device)
        found.add("the current device is " + std::to_string(now) + ", the thread had set " + std::to_string(device));
      reports[t] = found.text();
    });
  for (auto& t : threads) t.join();
  std::string all;
  for (const auto& r : reports) all += r;
  return all;
}

std::vector<long long> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<long long> d(-1000, 1000);
  std::vector<long long> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

/// A group of three slots on device 0, the same shape host staged, and again with a
/// worker thread per slot: shapes every machine has, whose streams, pools, staging memory
/// (and workers) the threads share.
struct shared_groups {
  mg::device_group direct{std::vector<int>{0, 0, 0}};
  mg::device_group staged{std::vector<int>{0, 0, 0}, mg::group_options{mg::peer_policy::host_staged}};
  mg::device_group workers{std::vector<int>{0, 0, 0}, [] {
                             mg::group_options o;
                             o.dispatch = mg::dispatch_policy::worker_threads;
                             return o;
                           }()};
  const mg::device_group& operator[](int i) const { return i % 3 == 0 ? direct : i % 3 == 1 ? staged : workers; }
};

TEST(Concurrency, EightThreadsRunMixedAlgorithmsOnSharedGroups) {
  shared_groups groups;
  const std::vector<std::size_t> sizes = test::small_run() ? std::vector<std::size_t>{0, 1, 2, 3, 4097, 10007}
                                                      : std::vector<std::size_t>{0, 1, 2, 3, 4097, 100003, 1000003};
  const int round_count = rounds(6, 2);
  const std::string report = run_threads([&](int t, findings& found) {
    for (int round = 0; round < round_count; ++round) {
      const std::size_t n = sizes[static_cast<std::size_t>(t + round) % sizes.size()];
      const auto& g = groups[t + round];
      const auto& other = groups[t + round + 1];
      std::vector<long long> a_host = random_values(n, static_cast<std::uint64_t>(t * 1000 + round));

      mg::distributed_vector<long long> a(a_host, g);
      mg::distributed_vector<long long> b(n, other);
      mg::copy(a, b);  // between the two groups
      mg::transform(b, b, affine{});
      std::vector<long long> b_host(n);
      std::transform(a_host.begin(), a_host.end(), b_host.begin(), affine{});

      mg::distributed_vector<long long> c(n, g);
      mg::inclusive_scan(b, c);  // output on the other group
      std::vector<long long> c_host(n);
      std::inclusive_scan(b_host.begin(), b_host.end(), c_host.begin());

      auto largest = mg::reduce_async(a, std::numeric_limits<long long>::lowest(), cuda::maximum<>{});
      found.equal(mg::reduce(c), std::reduce(c_host.begin(), c_host.end(), 0LL), "reduce");
      found.equal(mg::dot(b, b), std::inner_product(b_host.begin(), b_host.end(), b_host.begin(), 0LL), "dot");
      found.equal(mg::count_if(b, positive{}),
                  static_cast<std::size_t>(std::count_if(b_host.begin(), b_host.end(), positive{})), "count_if");
      found.equal(mg::min_element(c) - c.cbegin(),
                  std::min_element(c_host.begin(), c_host.end()) - c_host.begin(), "min_element");
      found.equal(largest.get(),
                  std::accumulate(a_host.begin(), a_host.end(), std::numeric_limits<long long>::lowest(),
                                  [](long long x, long long y) { return std::max(x, y); }),
                  "reduce_async with maximum");

      mg::exclusive_scan(a, a, 7LL);  // in place
      std::exclusive_scan(a_host.begin(), a_host.end(), a_host.begin(), 7LL);
      b.resize(n + 3);
      mg::fill(b.begin() + static_cast<std::ptrdiff_t>(n), b.end(), -2LL);
      b_host.resize(n + 3, -2);
      if (n > 0) {
        a[n / 2] = 99;
        a_host[n / 2] = 99;
        found.equal(a.at(n / 2), 99LL, "a write read back");
      }
      mg::distributed_vector<long long> a_copy(a);
      found.equal(mg::equal(a, a_copy), true, "equal with a copy");
      found.equal(mg::to_vector(a), a_host, "to_vector(a)");
      found.equal(mg::to_vector(b), b_host, "to_vector(b)");
      found.equal(mg::to_vector(c), c_host, "to_vector(c)");
    }
  });
  EXPECT_TRUE(report.empty()) << report;
  for (int i = 0; i < 3; ++i) groups[i].synchronize();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Concurrency, OneVectorReadByEightThreadsAtOnce) {
  shared_groups groups;
  // Under racecheck (tiny) fewer elements: still more than one tile of every kernel per
  // segment, with three segments, and every thread makes the same calls.
  const std::size_t n = test::tiny_run() ? 4099 : test::small_run() ? 10007 : 1000003;
  const std::vector<long long> host = random_values(n, 42);
  for (const mg::device_group* g : {&groups.direct, &groups.staged, &groups.workers}) {
    const mg::distributed_vector<long long> shared(host, *g);
    const long long total = std::reduce(host.begin(), host.end(), 0LL);
    std::vector<long long> scanned(n), transformed(n);
    std::inclusive_scan(host.begin(), host.end(), scanned.begin());
    std::transform(host.begin(), host.end(), transformed.begin(), affine{});
    const auto lowest = std::min_element(host.begin(), host.end()) - host.begin();
    const std::string report = run_threads([&](int t, findings& found) {
      const auto& other = groups[t];
      for (int round = 0; round < rounds(8, 1); ++round) {
        found.equal(mg::reduce(shared), total, "reduce");
        found.equal(mg::to_vector(shared), host, "to_vector");
        const std::size_t i = static_cast<std::size_t>(t * 104729 + round * 7919) % n;
        found.equal(shared[i], host[i], "operator[]");
        found.equal(mg::reduce(shared.cbegin() + t, shared.cend() - round, 0LL),
                    std::reduce(host.begin() + t, host.end() - round, 0LL), "reduce of a subrange");
        mg::distributed_vector<long long> out(n, other);
        mg::transform(shared, out, affine{});
        found.equal(mg::to_vector(out), transformed, "transform");
        mg::inclusive_scan(shared, out);
        found.equal(mg::to_vector(out), scanned, "inclusive_scan");
        mg::copy(shared, out);
        found.equal(mg::equal(shared, out), true, "equal after copy");
        found.equal(mg::min_element(shared) - shared.cbegin(), lowest, "min_element");
        found.equal(mg::count(shared, host[0]),
                    static_cast<std::size_t>(std::count(host.begin(), host.end(), host[0])), "count");
      }
    });
    EXPECT_TRUE(report.empty()) << report;
    EXPECT_EQ(mg::to_vector(shared), host) << "readers changed the vector";
  }
}

TEST(Concurrency, WritesToOneVectorUnderALockAreSeenWhole) {
  shared_groups groups;
  const std::size_t n = test::small_run() ? 10007 : 100003;
  const int writes_per_writer = std::max(2, rounds(25, 6));  // both kinds of update, even tiny
  mg::distributed_vector<long long> v(n, 0LL, groups.workers);
  std::shared_mutex lock;
  const std::string report = run_threads([&](int t, findings& found) {
    if (t % 2 == 0) {  // writers: one whole-vector update at a time
      for (int i = 0; i < writes_per_writer; ++i) {
        std::unique_lock exclusive(lock);
        if (i % 2)
          mg::for_each(v, increment{});
        else
          mg::transform(v, v, plus_one{});
      }
    } else {  // readers, together: every read sees a state between two whole updates
      long long last = 0;
      for (int i = 0; i < rounds(40, 10); ++i) {
        std::shared_lock shared(lock);
        const std::vector<long long> seen = mg::to_vector(v);
        const long long sum = mg::reduce(v);
        if (std::adjacent_find(seen.begin(), seen.end(), std::not_equal_to<>{}) != seen.end()) {
          found.add("a read saw a partly applied update");
          break;
        }
        found.equal(sum, seen[0] * static_cast<long long>(n), "reduce against to_vector");
        if (seen[0] < last) found.add("a later read saw an older state");
        last = seen[0];
      }
    }
  });
  EXPECT_TRUE(report.empty()) << report;
  const long long updates = writes_per_writer * ((thread_count + 1) / 2);  // the even threads write
  EXPECT_EQ(mg::count(v, updates), n);
}

TEST(Concurrency, GroupsComeAndGoOnManyThreads) {
  const int devices = mg::visible_device_count();
  const std::string report = run_threads([&](int t, findings& found) {
    for (int round = 0; round < rounds(5, 2); ++round) {
      mg::group_options options;
      if ((t + round) % 3 == 0) options.peers = mg::peer_policy::host_staged;
      if ((t + round) % 4 == 1) options.dispatch = mg::dispatch_policy::worker_threads;
      mg::device_group g({t % devices, (t + 1) % devices, t % devices}, options);
      const std::vector<long long> host = random_values(10007, static_cast<std::uint64_t>(t + 100 * round));
      mg::distributed_vector<long long> v(host, g);
      mg::distributed_vector<long long> w(v.size(), mg::default_group());
      mg::copy(v, w);
      found.equal(mg::reduce(w), std::reduce(host.begin(), host.end(), 0LL), "reduce after a copy between groups");
    }
  });
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
