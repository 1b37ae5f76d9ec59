#pragma once
// Shared fixtures of the GPU tests: group shapes, awkward sizes, element types with random
// data, and comparisons with tolerances derived from n for floating point.

#include <multigpu/runtime/device_group.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace test {

namespace mg = multigpu;

/// A 24-byte user type with its own operators.
struct vec3 {
  double x, y, z;
  __host__ __device__ friend vec3 operator+(const vec3& a, const vec3& b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
  __host__ __device__ friend vec3 operator*(const vec3& a, const vec3& b) { return {a.x * b.x, a.y * b.y, a.z * b.z}; }
  __host__ __device__ friend bool operator==(const vec3& a, const vec3& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
  __host__ __device__ friend bool operator<(const vec3& a, const vec3& b) {
    return a.x < b.x || (a.x == b.x && (a.y < b.y || (a.y == b.y && a.z < b.z)));
  }
};
inline std::ostream& operator<<(std::ostream& out, const vec3& v) {
  return out << "(" << v.x << ", " << v.y << ", " << v.z << ")";
}

/// A user operator on vec3 (component-wise sum): not known to the library.
struct vec3_plus {
  __host__ __device__ vec3 operator()(const vec3& a, const vec3& b) const { return a + b; }
};

/// x -> a x + b modulo a prime, composed left to right: associative, not commutative.
struct affine {
  std::uint64_t a, b;
  __host__ __device__ friend bool operator==(const affine& l, const affine& r) { return l.a == r.a && l.b == r.b; }
};
inline std::ostream& operator<<(std::ostream& out, const affine& f) { return out << "[" << f.a << "x+" << f.b << "]"; }
inline constexpr std::uint64_t affine_prime = 2147483647ull;
struct compose {
  // (f then g)(x) = g.a (f.a x + f.b) + g.b
  __host__ __device__ affine operator()(const affine& f, const affine& g) const {
    return {(f.a * g.a) % affine_prime, (f.b * g.a + g.b) % affine_prime};
  }
};

/// A named group shape. Built once per test binary: set-up is not what is under test.
struct shape {
  std::string name;
  mg::device_group group;
};

/// An environment variable set to something other than "" or "0".
inline bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value && *value && *value != '0';
}

/// An environment variable's number, or `fallback` when it is unset or empty.
inline std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::strtoull(text, nullptr, 0) : fallback;
}

inline const std::vector<shape>& shapes() {
  static const std::vector<shape> all = [] {
    std::vector<shape> s;
    s.push_back({"{0}", mg::device_group({0})});
    s.push_back({"{0,0,0}", mg::device_group({0, 0, 0})});
    s.push_back({"{0 x7}", mg::device_group({0, 0, 0, 0, 0, 0, 0})});
    s.push_back({"{0,0,0} host staged", mg::device_group({0, 0, 0}, {mg::peer_policy::host_staged})});
    // Collectives captured into CUDA graphs and replayed: partials in device memory, and in
    // mapped host memory. MULTIGPU_TEST_NO_GRAPH=1 leaves them out (to tell whether a failure
    // needs graph replay).
    if (!env_flag("MULTIGPU_TEST_NO_GRAPH")) {
      s.push_back({"{0,0,0} graph", mg::device_group({0, 0, 0}, {.dispatch = mg::dispatch_policy::graph})});
      s.push_back({"{0,0} graph host staged", mg::device_group({0, 0}, {.peers = mg::peer_policy::host_staged,
                                                                          .dispatch = mg::dispatch_policy::graph})});
    }
    if (mg::visible_device_count() > 1) {
      s.push_back({"all devices", mg::device_group::all()});
      s.push_back({"all devices host staged", mg::device_group::all({mg::peer_policy::host_staged})});
      s.push_back({"all devices graph", mg::device_group::all({.dispatch = mg::dispatch_policy::graph})});
      std::vector<int> twice;
      for (int d = 0; d < mg::visible_device_count(); ++d) twice.insert(twice.end(), {d, d});
      s.push_back({"every device twice", mg::device_group(twice)});
    }
    return s;
  }();
  return all;
}

/// The shapes of the exchange tests (sort, gather, scatter): {0}, {0,0,0}, eight slots of one
/// GPU (the issue's {0 x8}), host staged, and every device when there are several.
inline const std::vector<shape>& exchange_shapes() {
  static const std::vector<shape> all = [] {
    std::vector<shape> s;
    s.push_back({"{0}", mg::device_group({0})});
    s.push_back({"{0,0,0}", mg::device_group({0, 0, 0})});
    s.push_back({"{0 x8}", mg::device_group(std::vector<int>(8, 0))});
    s.push_back({"{0,0,0} host staged", mg::device_group({0, 0, 0}, {mg::peer_policy::host_staged})});
    if (mg::visible_device_count() > 1) {
      s.push_back({"all devices", mg::device_group::all()});
      s.push_back({"all devices host staged", mg::device_group::all({mg::peer_policy::host_staged})});
    }
    return s;
  }();
  return all;
}

/// MULTIGPU_TEST_TINY=1: for racecheck, which costs a hundred times more than the other
/// sanitizers on CUB's shared-memory kernels: the fewest cases that still reach every
/// kernel and every collective (sizes 0, k + 1 and one over a block; the sort tests keep
/// a random and a duplicate-heavy distribution). It implies MULTIGPU_TEST_SMALL.
inline bool tiny_run() { return env_flag("MULTIGPU_TEST_TINY"); }

/// MULTIGPU_TEST_SMALL=1 leaves out the largest sizes, for runs under compute-sanitizer.
inline bool small_run() { return env_flag("MULTIGPU_TEST_SMALL") || tiny_run(); }

/// 0, 1, 2, k-1, k+1, a prime near a million, and 2^24 + 5.
inline std::vector<std::size_t> sizes(std::size_t k, bool large = true) {
  if (tiny_run()) return {0, k + 1, 4099};
  if (small_run()) return {0, 1, 2, k - 1, k + 1, 4099};
  std::vector<std::size_t> n{0, 1, 2, k - 1, k + 1, 1000003};
  if (large) n.push_back((std::size_t{1} << 24) + 5);
  return n;
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 engine(20261202);
  return engine;
}

template <class T>
T random_value() {
  if constexpr (std::is_same_v<T, vec3>) {
    std::uniform_real_distribution<double> d(-1, 1);
    return {d(rng()), d(rng()), d(rng())};
  } else if constexpr (std::is_same_v<T, affine>) {
    std::uniform_int_distribution<std::uint64_t> d(1, affine_prime - 1);
    return {d(rng()), d(rng())};
  } else if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> d(-1, 1);
    return static_cast<T>(d(rng()));
  } else {
    std::uniform_int_distribution<long long> d(-100, 100);
    return static_cast<T>(d(rng()));
  }
}

template <class T>
std::vector<T> random_vector(std::size_t n) {
  std::vector<T> v(n);
  for (auto& x : v) x = random_value<T>();
  return v;
}

/// |x| summed, for error bounds.
template <class T>
double magnitude(const T& x) {
  if constexpr (std::is_same_v<T, vec3>)
    return std::abs(x.x) + std::abs(x.y) + std::abs(x.z);
  else
    return std::abs(static_cast<double>(x));
}

template <class T>
constexpr double epsilon() {
  if constexpr (std::is_same_v<T, vec3>)
    return std::numeric_limits<double>::epsilon();
  else if constexpr (std::is_floating_point_v<T>)
    return std::numeric_limits<T>::epsilon();
  else
    return 0;
}

/// Tolerance for a sum of n terms whose magnitudes add up to `scale`, computed in any
/// order: blocked and tree orders stay within about (items per thread + tiles + log n)
/// roundings; we allow 4 sqrt(n) + 64 of them.
template <class T>
double tolerance(std::size_t n, double scale) {
  return epsilon<T>() * (std::sqrt(static_cast<double>(n)) * 4 + 64) * scale;
}

template <class T>
::testing::AssertionResult near(const T& got, const T& want, double tol) {
  auto close = [&](double g, double w) { return std::abs(g - w) <= tol; };
  bool ok;
  if constexpr (std::is_same_v<T, vec3>)
    ok = close(got.x, want.x) && close(got.y, want.y) && close(got.z, want.z);
  else if constexpr (std::is_floating_point_v<T>)
    ok = close(got, want);
  else
    ok = got == want;
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", expected " << want << " (tolerance " << tol << ")";
}

/// Element-wise equality of two host vectors, reporting the first few differences.
template <class T>
::testing::AssertionResult same_elements(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " against " << want.size();
  std::size_t bad = 0;
  auto failure = ::testing::AssertionFailure();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i])) {
      if (bad < 5) failure << "element " << i << ": got " << got[i] << ", expected " << want[i] << "\n";
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return failure << bad << " of " << got.size() << " elements differ";
}

using element_types = ::testing::Types<int, long long, float, double, vec3>;

/// call() throws std::invalid_argument whose message holds `text` (a test of bad input; the
/// caller checks that nothing was written).
template <class F>
void expect_invalid_argument(const char* name, F&& call, const char* text) {
  SCOPED_TRACE(name);
  try {
    call();
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

/// Element reads and writes in one batch, as the host would do them one by one: indices in any
/// order, repeated for reads, and bad input refused with nothing written. (For tests that
/// include the container before this header.)
template <class T>
void check_batched_reads_and_writes(const multigpu::device_group& group) {
  auto host = random_vector<T>(group.size() * 7 + 3);
  multigpu::distributed_vector<T> v(host, group);
  const std::size_t n = host.size();
  const std::vector<std::size_t> wanted{n - 1, 0, n / 2, n / 2, 1, n - 1};
  const std::vector<T> got = v.read(std::span<const std::size_t>(wanted));
  std::vector<T> expected;
  for (std::size_t i : wanted) expected.push_back(host[i]);
  EXPECT_TRUE(same_elements(got, expected));
  EXPECT_TRUE(v.read(std::span<const std::size_t>()).empty());
  const std::vector<std::size_t> at{n - 2, 3, n / 3};
  const std::vector<T> values{random_value<T>(), random_value<T>(), random_value<T>()};
  v.write(std::span<const std::size_t>(at), std::span<const T>(values));
  for (std::size_t j = 0; j < at.size(); ++j) host[at[j]] = values[j];
  EXPECT_TRUE(same_elements(multigpu::to_vector(v), host));
  // Bad input: nothing written.
  const std::vector<std::size_t> past{0, n};
  const std::vector<T> two{random_value<T>(), random_value<T>()};
  EXPECT_THROW((void)v.read(std::span<const std::size_t>(past)), std::out_of_range);
  EXPECT_THROW(v.write(std::span<const std::size_t>(past), std::span<const T>(two)), std::out_of_range);
  EXPECT_THROW(v.write(std::span<const std::size_t>(at), std::span<const T>(two)), std::invalid_argument);
  EXPECT_TRUE(same_elements(multigpu::to_vector(v), host)) << "a refused write wrote something";
}

}  // namespace test
