// The promise that consecutive calls need no host synchronisation, tested the way users rely
// on it: batches of 10 to 50 random operations over several vectors on two groups (copies
// within and between groups, transforms in place and not, scans in place, async reductions
// whose futures are read only at the end, stencils over periodic halos), with no host read in
// between; then everything is checked once against a host model. Unsigned element types, so
// every result is exact (wrap-around arithmetic) and any race shows as a mismatch.
//
// Environment: MULTIGPU_NOSYNC_CASES=N (default 40), MULTIGPU_NOSYNC_SEED=S (default
// 20261203). A long run: MULTIGPU_NOSYNC_CASES=100000.

#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace mg = multigpu;

template <class T>
struct affine_map {
  T a, b;
  __host__ __device__ T operator()(T x) const { return static_cast<T>(a * x + b); }
};

template <class T>
struct add_to {
  T k;
  __host__ __device__ void operator()(T& x) const { x = static_cast<T>(x + k); }
};

template <class T>
struct smooth {
  __host__ __device__ T operator()(mg::stencil_window<T> w) const { return static_cast<T>(w[-1] + T(2) * w[0] + w[1]); }
};

struct group_choice {
  std::string name;
  mg::device_group group;
};

std::vector<group_choice> make_groups() {
  mg::group_options staged;
  staged.peers = mg::peer_policy::host_staged;
  mg::group_options mapped;
  mapped.merge = mg::merge_policy::host_mapped;
  mg::group_options workers;
  workers.dispatch = mg::dispatch_policy::worker_threads;
  std::vector<group_choice> g;
  g.push_back({"{0}", mg::device_group({0})});
  g.push_back({"{0,0,0}", mg::device_group({0, 0, 0})});
  g.push_back({"{0,0} host staged", mg::device_group({0, 0}, staged)});
  g.push_back({"{0,0,0,0} host mapped", mg::device_group({0, 0, 0, 0}, mapped)});
  g.push_back({"{0,0,0} workers", mg::device_group({0, 0, 0}, workers)});
  g.push_back({"{0,0,0} graph", mg::device_group({0, 0, 0}, {.dispatch = mg::dispatch_policy::graph})});
  if (mg::visible_device_count() > 1) g.push_back({"all", mg::device_group::all()});
  return g;
}

template <class T>
class batch {
 public:
  batch(std::uint64_t seed, const std::vector<group_choice>& groups) : rng_(seed) {
    static constexpr std::size_t sizes[] = {0, 1, 2, 3, 7, 97, 7919, 65537};
    std::uniform_int_distribution<int> coin(0, 3);
    n_ = coin(rng_) == 0 ? std::uniform_int_distribution<std::size_t>(1, 1 << 18)(rng_)
                         : sizes[std::uniform_int_distribution<std::size_t>(0, std::size(sizes) - 1)(rng_)];
    const group_choice& a = groups[std::uniform_int_distribution<std::size_t>(0, groups.size() - 1)(rng_)];
    const group_choice& b = groups[std::uniform_int_distribution<std::size_t>(0, groups.size() - 1)(rng_)];
    description_ << "n=" << n_ << ", groups " << a.name << " and " << b.name << ":";
    for (std::size_t i = 0; i < vectors; ++i) {
      const mg::device_group& g = (i % 2 == 0) ? a.group : b.group;
      std::vector<T> data(n_);
      for (auto& x : data) x = static_cast<T>(rng_());
      dev_[i].emplace(data, g);
      host_[i] = std::move(data);
    }
    halo_in_.emplace(n_, mg::halo{1, true}, a.group);
    halo_out_.emplace(n_, mg::halo{1, true}, a.group);
    mg::fill(*halo_in_, T(1));
    halo_host_.assign(n_, T(1));
  }

  void step() {
    const int kind = std::uniform_int_distribution<int>(0, 9)(rng_);
    const std::size_t i = pick(), j = pick();
    auto& v = *dev_[i];
    auto& w = *dev_[j];
    const T c = static_cast<T>(rng_());
    switch (kind) {
      case 0:
        description_ << " fill(v" << i << ")";
        mg::fill(v, c);
        std::fill(host_[i].begin(), host_[i].end(), c);
        break;
      case 1: {
        description_ << " transform(v" << i << " -> v" << j << ")";
        const affine_map<T> f{static_cast<T>(c | 1), static_cast<T>(c >> 3)};
        mg::transform(v, w, f);
        std::transform(host_[i].begin(), host_[i].end(), host_[j].begin(), f);
        break;
      }
      case 2:
        description_ << " copy(v" << i << " -> v" << j << ")";
        mg::copy(v, w);
        host_[j] = host_[i];
        break;
      case 3: {
        if (i == j || n_ == 0) break;
        const std::size_t first = std::uniform_int_distribution<std::size_t>(0, n_)(rng_);
        const std::size_t last = std::uniform_int_distribution<std::size_t>(first, n_)(rng_);
        const std::size_t out = std::uniform_int_distribution<std::size_t>(0, n_ - (last - first))(rng_);
        description_ << " copy(v" << i << "[" << first << "," << last << ") -> v" << j << "+" << out << ")";
        mg::copy(v.begin() + static_cast<std::ptrdiff_t>(first), v.begin() + static_cast<std::ptrdiff_t>(last),
                 w.begin() + static_cast<std::ptrdiff_t>(out));
        std::copy(host_[i].begin() + static_cast<std::ptrdiff_t>(first), host_[i].begin() + static_cast<std::ptrdiff_t>(last),
                  host_[j].begin() + static_cast<std::ptrdiff_t>(out));
        break;
      }
      case 4:
        description_ << " inclusive_scan(v" << i << " -> v" << j << ")";
        mg::inclusive_scan(v, w);
        std::inclusive_scan(host_[i].begin(), host_[i].end(), host_[j].begin(), std::plus<T>{});
        break;
      case 5:
        description_ << " exclusive_scan(v" << i << " in place)";
        mg::exclusive_scan(v, v, c);
        std::exclusive_scan(host_[i].begin(), host_[i].end(), host_[i].begin(), c, std::plus<T>{});
        break;
      case 6:
        description_ << " reduce_async(v" << i << ")";
        pending_.emplace_back(mg::reduce_async(v), std::reduce(host_[i].begin(), host_[i].end(), T{}, std::plus<T>{}));
        break;
      case 7:
        description_ << " for_each(v" << i << ")";
        mg::for_each(v, add_to<T>{c});
        for (auto& x : host_[i]) x = static_cast<T>(x + c);
        break;
      case 8: {
        description_ << " stencil";
        if (n_ < 3) break;
        mg::copy(v, *halo_in_);  // the halo vector takes a vector's values (maybe across groups)
        halo_host_ = host_[i];
        mg::stencil_transform(*halo_in_, *halo_out_, 1, smooth<T>{});
        std::vector<T> out(n_);
        for (std::size_t k = 0; k < n_; ++k)
          out[k] = static_cast<T>(halo_host_[(k + n_ - 1) % n_] + T(2) * halo_host_[k] + halo_host_[(k + 1) % n_]);
        mg::copy(*halo_out_, w);
        host_[j] = out;
        break;
      }
      case 9:
        description_ << " count(v" << i << ")";
        pending_count_.emplace_back(mg::reduce_async(v, T(0), cuda::std::plus<>{}),
                                    std::reduce(host_[i].begin(), host_[i].end(), T{}, std::plus<T>{}));
        break;
    }
  }

  /// The one host read of the batch: futures, then every vector.
  std::string check() {
    std::ostringstream errors;
    for (auto& [f, want] : pending_)
      if (T got = f.get(); got != want) errors << "\n  a reduce_async gave " << got << ", expected " << want;
    for (auto& [f, want] : pending_count_)
      if (T got = f.get(); got != want) errors << "\n  a reduce_async with init gave " << got << ", expected " << want;
    for (std::size_t i = 0; i < vectors; ++i) {
      const std::vector<T> got = mg::to_vector(*dev_[i]);
      for (std::size_t k = 0; k < n_; ++k)
        if (got[k] != host_[i][k]) {
          errors << "\n  v" << i << "[" << k << "] = " << got[k] << ", expected " << host_[i][k];
          break;
        }
    }
    const std::string e = errors.str();
    return e.empty() ? e : description_.str() + e;
  }

 private:
  static constexpr std::size_t vectors = 4;
  std::size_t pick() { return std::uniform_int_distribution<std::size_t>(0, vectors - 1)(rng_); }
  std::mt19937_64 rng_;
  std::size_t n_ = 0;
  std::ostringstream description_;
  std::array<std::optional<mg::distributed_vector<T>>, vectors> dev_;
  std::array<std::vector<T>, vectors> host_;
  std::optional<mg::distributed_vector<T>> halo_in_, halo_out_;
  std::vector<T> halo_host_;
  std::vector<std::pair<mg::future<T>, T>> pending_, pending_count_;
};

template <class T>
void run_batches(const char* type) {
  const auto groups = make_groups();
  const std::uint64_t cases = test::env_or("MULTIGPU_NOSYNC_CASES", 40);
  const std::uint64_t seed = test::env_or("MULTIGPU_NOSYNC_SEED", 20261203);
  std::uint64_t failures = 0;
  for (std::uint64_t c = 0; c < cases && failures < 5; ++c) {
    batch<T> b(seed + c, groups);
    std::mt19937_64 length(seed + c);
    const int ops = std::uniform_int_distribution<int>(10, 50)(length);
    for (int k = 0; k < ops; ++k) b.step();
    const std::string error = b.check();
    if (!error.empty()) {
      ++failures;
      ADD_FAILURE() << type << " case with seed " << seed + c << ": " << error;
    }
  }
  std::printf("no-sync batches of %s: %llu cases, %llu failed\n", type, static_cast<unsigned long long>(cases),
              static_cast<unsigned long long>(failures));
}

}  // namespace

TEST(NoSync, BatchesOfUnsignedInt) { run_batches<unsigned>("unsigned"); }
TEST(NoSync, BatchesOfUnsignedLongLong) { run_batches<unsigned long long>("unsigned long long"); }
