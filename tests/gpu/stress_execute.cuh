#pragma once
// The executor of the randomized differential test: runs a plan's operations on
// distributed_vector and on std::vector side by side and compares after every operation.
// Integer results must match exactly. Floating-point results must match within a tolerance
// derived from n, after which the host model continues from the device's values, so that
// each operation is judged on its own rounding and not on the errors before it.

#include "stress_ops.cuh"

#include <multigpu/multigpu.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace stress {

template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

template <class T>
class runner {
 public:
  explicit runner(const case_plan& plan) : plan_(plan) {
    for (const auto& spec : plan.groups) groups_.push_back(group_for(spec));
    MULTIGPU_CUDA_TRY(cudaGetDevice(&device_));
    for (const auto& g : groups_) {
      g.synchronize();
      for (std::size_t s = 0; s < g.size(); ++s) pool_start_.emplace(&g.pool(s), g.pool(s).usage().used_bytes);
    }
  }

  /// Runs one operation and compares its results; an empty string when they match.
  std::string apply(const operation& op) {
    std::string error = dispatch(op);
    if (!error.empty()) return error;
    int now = -1;
    MULTIGPU_CUDA_TRY(cudaGetDevice(&now));
    if (now != device_)
      return concat("the operation changed the calling thread's current device from ", device_, " to ", now);
    return {};
  }

  /// Every vector against its model (exactly: each was last compared after the operation
  /// that wrote it), then no CUDA error is pending and, once the vectors are gone, the
  /// pools hold no more memory than before the run.
  std::string finish() {
    for (int s = 0; s < vector_slots; ++s) {
      if (!dev_[s]) continue;
      std::string error = check(s, exact);
      if (!error.empty()) return "final check: " + error;
    }
    for (auto& d : dev_) d.reset();
    for (const auto& g : groups_) g.synchronize();
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
      return concat("a CUDA error is pending after the run: ", cudaGetErrorName(e));
    for (const auto& [pool, used] : pool_start_) {
      const std::size_t now = pool->usage().used_bytes;
      if (now != used)
        return concat("the pool of device ", pool->device(), " holds ", now, " bytes in use after the run, ", used,
                      " before: memory was lost");
    }
    return {};
  }

 private:
  static double exact(std::size_t) { return 0.0; }

  mg::distributed_vector<T>& d(int s) { return *dev_[s]; }
  const mg::distributed_vector<T>& cd(int s) { return *dev_[s]; }
  std::vector<T>& h(int s) { return host_[s]; }

  static std::string name(int s) { return "v" + std::to_string(s); }

  std::string where(int s, std::size_t i) {
    const auto loc = d(s).layout().locate(i);
    return concat("segment ", loc.segment, " on device ", d(s).group().device(loc.segment));
  }

  /// The device vector against its model; `tol(i)` is element i's tolerance.
  template <class Tol>
  std::string check(int s, Tol&& tol) {
    std::vector<T> got = mg::to_vector(cd(s));
    const std::vector<T>& want = h(s);
    if (cd(s).size() != want.size() || got.size() != want.size())
      return concat(name(s), " has ", cd(s).size(), " elements (to_vector gave ", got.size(), "), expected ",
                    want.size());
    std::size_t bad = 0;
    std::ostringstream detail;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (close(got[i], want[i], tol(i))) continue;
      if (bad < 6)
        detail << "    " << name(s) << "[" << i << "] (" << where(s, i) << "): got " << show(got[i]) << ", expected "
               << show(want[i]) << ", tolerance " << tol(i) << "\n";
      ++bad;
    }
    if (bad > 0) return concat(bad, " of ", got.size(), " elements of ", name(s), " differ:\n", detail.str());
    if constexpr (inexact<T>) host_[s] = std::move(got);  // continue from the device's roundings
    return {};
  }

  /// Element-wise results in [first, first + count) of vector s, exact elsewhere.
  std::string check_elementwise(int s, std::size_t first, std::size_t count) {
    const std::vector<T>& want = h(s);
    return check(s, [&](std::size_t i) {
      return i >= first && i < first + count ? elementwise_tolerance(want[i]) : 0.0;
    });
  }

  /// Keeps floating-point magnitudes bounded over long sequences: scaling by a power of two
  /// is exact on both sides.
  std::string rescale(int s) {
    if constexpr (!inexact<T>) {
      return {};
    } else {
      constexpr double limit = std::is_same_v<T, float> ? 0x1p40 : 0x1p200;
      double largest = 0;
      for (const T& x : h(s)) largest = std::max(largest, magnitude(x));
      if (!(largest > limit) || !std::isfinite(largest)) return {};
      const scale_by f{std::ldexp(1.0, -std::ilogb(largest))};
      mg::transform(cd(s), d(s), f);
      for (T& x : h(s)) x = f(x);
      std::string error = check_elementwise(s, 0, h(s).size());
      return error.empty() ? error : "after rescaling: " + error;
    }
  }

  /// Checks vector s after an element-wise write of [first, first + count), then rescales.
  std::string written(int s, std::size_t first, std::size_t count) {
    std::string error = check_elementwise(s, first, count);
    return error.empty() ? rescale(s) : error;
  }

  std::string dispatch(const operation& op) {
    std::mt19937_64 values(op.seed ^ 0x6a09e667f3bcc908ull);
    const std::size_t len = op.last - op.first;
    switch (op.kind) {
      case op_kind::construct_from_host: {
        std::vector<T> data = random_data<T>(op.n, op.seed);
        const mg::device_group& g = groups_[static_cast<std::size_t>(op.group)];
        if (op.seed % 3 == 0)
          dev_[op.out].emplace(data, g);
        else if (op.seed % 3 == 1)
          dev_[op.out].emplace(data.begin(), data.end(), g);
        else
          dev_[op.out].emplace(std::span<const T>(data), g);
        h(op.out) = std::move(data);
        return check(op.out, exact);
      }
      case op_kind::construct_filled: {
        const mg::device_group& g = groups_[static_cast<std::size_t>(op.group)];
        if (op.seed & 1) {
          const T value = random_value<T>(values);
          dev_[op.out].emplace(op.n, value, g);
          h(op.out).assign(op.n, value);
        } else {
          // Halos change no size, index or result: only where the segments sit in memory.
          if (const std::size_t width = halo_width(op); width > 0)
            dev_[op.out].emplace(op.n, mg::halo{width, false}, g);
          else
            dev_[op.out].emplace(op.n, g);
          h(op.out).assign(op.n, T{});
        }
        return check(op.out, exact);
      }
      case op_kind::copy_construct:
        dev_[op.out].emplace(cd(op.in));
        h(op.out) = h(op.in);
        return check(op.out, exact);
      case op_kind::copy_assign:
        d(op.out) = cd(op.in);
        h(op.out) = std::vector<T>(h(op.in));
        return check(op.out, exact);
      case op_kind::move_assign: {
        d(op.out) = std::move(d(op.in));
        h(op.out) = std::move(h(op.in));
        h(op.in).clear();
        std::string error = check(op.out, exact);
        if (error.empty() && !cd(op.in).empty())
          return concat("the moved-from ", name(op.in), " has ", cd(op.in).size(), " elements, expected none");
        return error.empty() ? check(op.in, exact) : error;
      }
      case op_kind::swap_vectors: {
        if (op.seed % 3 == 0)
          d(op.out).swap(d(op.in));
        else if (op.seed % 3 == 1)
          swap(d(op.out), d(op.in));  // the friend, found by ADL
        else
          std::swap(d(op.out), d(op.in));  // through the move operations
        std::swap(h(op.out), h(op.in));
        std::string error = check(op.out, exact);
        return error.empty() ? check(op.in, exact) : error;
      }
      case op_kind::copy_whole:
        mg::copy(cd(op.in), d(op.out));
        if (op.in != op.out) h(op.out) = h(op.in);
        return check(op.out, exact);
      case op_kind::copy_range: {
        auto end = mg::copy(cd(op.in).begin() + static_cast<std::ptrdiff_t>(op.first),
                            cd(op.in).begin() + static_cast<std::ptrdiff_t>(op.last),
                            d(op.out).begin() + static_cast<std::ptrdiff_t>(op.out_first));
        if (end.index() != op.out_first + len)
          return concat("mg::copy returned index ", end.index(), ", expected ", op.out_first + len);
        std::copy(h(op.in).begin() + static_cast<std::ptrdiff_t>(op.first),
                  h(op.in).begin() + static_cast<std::ptrdiff_t>(op.last),
                  h(op.out).begin() + static_cast<std::ptrdiff_t>(op.out_first));
        return check(op.out, exact);
      }
      case op_kind::resize:
        d(op.out).resize(op.n);
        h(op.out).resize(op.n);
        return check(op.out, exact);
      case op_kind::fill_whole: {
        const T value = random_value<T>(values);
        mg::fill(d(op.out), value);
        std::fill(h(op.out).begin(), h(op.out).end(), value);
        return check(op.out, exact);
      }
      case op_kind::fill_range: {
        const T value = random_value<T>(values);
        mg::fill(d(op.out).begin() + static_cast<std::ptrdiff_t>(op.first),
                 d(op.out).begin() + static_cast<std::ptrdiff_t>(op.last), value);
        std::fill(h(op.out).begin() + static_cast<std::ptrdiff_t>(op.first),
                  h(op.out).begin() + static_cast<std::ptrdiff_t>(op.last), value);
        return check(op.out, exact);
      }
      case op_kind::write_element: {
        const T value = random_value<T>(values);
        if (op.seed & 2)
          d(op.out)[op.first] = value;
        else
          *(d(op.out).begin() + static_cast<std::ptrdiff_t>(op.first)) = value;
        h(op.out)[op.first] = value;
        const T back = cd(op.out)[op.first];
        if (!(back == value))
          return concat("reading ", name(op.out), "[", op.first, "] back gave ", show(back), ", wrote ", show(value));
        return check(op.out, exact);
      }
      case op_kind::read_element: {
        const T want = h(op.in)[op.first];
        const T by_const = cd(op.in)[op.first];
        const T by_at = cd(op.in).at(op.first);
        const T by_proxy = d(op.in)[op.first];
        const T by_iterator = *(cd(op.in).begin() + static_cast<std::ptrdiff_t>(op.first));
        for (const T& got : {by_const, by_at, by_proxy, by_iterator})
          if (!(got == want))
            return concat("reading ", name(op.in), "[", op.first, "] (", where(op.in, op.first), ") gave ", show(got),
                          ", expected ", show(want));
        return {};
      }
      case op_kind::transform_whole:
      case op_kind::transform_range:
        return with_unary(op.fn, [&](auto f) {
          const bool whole = op.kind == op_kind::transform_whole;
          const std::size_t first = whole ? 0 : op.first, count = whole ? h(op.in).size() : len;
          const std::size_t out_first = whole ? 0 : op.out_first;
          if (whole)
            mg::transform(cd(op.in), d(op.out), f);
          else
            mg::transform(cd(op.in).begin() + static_cast<std::ptrdiff_t>(first),
                          cd(op.in).begin() + static_cast<std::ptrdiff_t>(first + count),
                          d(op.out).begin() + static_cast<std::ptrdiff_t>(out_first), f);
          std::vector<T> result(count);
          std::transform(h(op.in).begin() + static_cast<std::ptrdiff_t>(first),
                         h(op.in).begin() + static_cast<std::ptrdiff_t>(first + count), result.begin(), f);
          std::copy(result.begin(), result.end(), h(op.out).begin() + static_cast<std::ptrdiff_t>(out_first));
          return written(op.out, out_first, count);
        });
      case op_kind::transform2_whole:
      case op_kind::transform2_range:
        return with_binary(op.fn, [&](auto f) {
          const bool whole = op.kind == op_kind::transform2_whole;
          const std::size_t first = whole ? 0 : op.first, count = whole ? h(op.in).size() : len;
          const std::size_t first2 = whole ? 0 : op.first2, out_first = whole ? 0 : op.out_first;
          if (whole)
            mg::transform(cd(op.in), cd(op.in2), d(op.out), f);
          else
            mg::transform(cd(op.in).begin() + static_cast<std::ptrdiff_t>(first),
                          cd(op.in).begin() + static_cast<std::ptrdiff_t>(first + count),
                          cd(op.in2).begin() + static_cast<std::ptrdiff_t>(first2),
                          d(op.out).begin() + static_cast<std::ptrdiff_t>(out_first), f);
          std::vector<T> result(count);
          std::transform(h(op.in).begin() + static_cast<std::ptrdiff_t>(first),
                         h(op.in).begin() + static_cast<std::ptrdiff_t>(first + count),
                         h(op.in2).begin() + static_cast<std::ptrdiff_t>(first2), result.begin(), f);
          std::copy(result.begin(), result.end(), h(op.out).begin() + static_cast<std::ptrdiff_t>(out_first));
          return written(op.out, out_first, count);
        });
      case op_kind::reduce_whole:
      case op_kind::reduce_range:
        return reduce(op, values);
      case op_kind::inclusive_scan_whole:
      case op_kind::inclusive_scan_range:
      case op_kind::exclusive_scan_whole:
      case op_kind::exclusive_scan_range:
        return scan(op, values);
    }
    return "unknown operation";
  }

  std::string reduce(const operation& op, std::mt19937_64& values) {
    const auto fn = static_cast<binary_op>(op.fn);
    const bool whole = op.kind == op_kind::reduce_whole;
    const std::size_t first = whole ? 0 : op.first, last = whole ? h(op.in).size() : op.last;
    T init = random_value<T>(values);
    const int form = static_cast<int>((op.seed >> 8) % 3);  // reduce, reduce_async().get(), reduce(v)
    T got = with_reduce_op<T>(fn, [&](auto o) -> T {
      auto b = cd(op.in).begin() + static_cast<std::ptrdiff_t>(first);
      auto e = cd(op.in).begin() + static_cast<std::ptrdiff_t>(last);
      if (form == 1) {
        auto pending = whole ? mg::reduce_async(cd(op.in), init, o) : mg::reduce_async(b, e, init, o);
        return pending.get();
      }
      if constexpr (std::is_same_v<decltype(o), cuda::std::plus<>>) {
        if (form == 2 && whole) {
          init = T{};
          return mg::reduce(cd(op.in));
        }
      }
      return whole ? mg::reduce(cd(op.in), init, o) : mg::reduce(b, e, init, o);
    });
    T want;
    double tol = 0;
    if (is_sum(fn)) {
      precise_sum<T> sum(init);
      for (std::size_t i = first; i < last; ++i) sum.add(h(op.in)[i]);
      want = sum.value();
      tol = tolerance<T>(last - first, sum.scale);
    } else {
      want = init;
      for (std::size_t i = first; i < last; ++i) want = host_apply(fn, want, h(op.in)[i]);
    }
    if (!close(got, want, tol))
      return concat("reduce of ", name(op.in), "[", first, ", ", last, ") with ", stress::name(fn), " gave ", show(got),
                    ", expected ", show(want), " (tolerance ", tol, ", init ", show(init), ")");
    return {};
  }

  std::string scan(const operation& op, std::mt19937_64& values) {
    const auto fn = static_cast<binary_op>(op.fn);
    const bool whole = op.kind == op_kind::inclusive_scan_whole || op.kind == op_kind::exclusive_scan_whole;
    const bool exclusive = op.kind == op_kind::exclusive_scan_whole || op.kind == op_kind::exclusive_scan_range;
    const std::size_t first = whole ? 0 : op.first, count = whole ? h(op.in).size() : op.last - op.first;
    const std::size_t out_first = whole ? 0 : op.out_first;
    const T init = random_value<T>(values);
    with_scan_op<T>(fn, [&](auto o) {
      auto b = cd(op.in).begin() + static_cast<std::ptrdiff_t>(first);
      auto e = b + static_cast<std::ptrdiff_t>(count);
      auto out = d(op.out).begin() + static_cast<std::ptrdiff_t>(out_first);
      if (exclusive) {
        if (whole)
          mg::exclusive_scan(cd(op.in), d(op.out), init, o);
        else
          mg::exclusive_scan(b, e, out, init, o);
      } else {
        if (whole)
          mg::inclusive_scan(cd(op.in), d(op.out), o);
        else
          mg::inclusive_scan(b, e, out, o);
      }
      return 0;
    });
    const std::vector<T> input(h(op.in).begin() + static_cast<std::ptrdiff_t>(first),
                               h(op.in).begin() + static_cast<std::ptrdiff_t>(first + count));
    std::vector<T> want(count);
    std::vector<double> tol(count, 0.0);
    if (is_sum(fn)) {
      precise_sum<T> sum(exclusive ? init : T{});
      for (std::size_t i = 0; i < count; ++i) {
        if (!exclusive) sum.add(input[i]);
        want[i] = sum.value();
        tol[i] = tolerance<T>(count, sum.scale);
        if (exclusive) sum.add(input[i]);
      }
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        if (exclusive)
          want[i] = i == 0 ? init : host_apply(fn, want[i - 1], input[i - 1]);
        else
          want[i] = i == 0 ? input[0] : host_apply(fn, want[i - 1], input[i]);
      }
    }
    std::copy(want.begin(), want.end(), h(op.out).begin() + static_cast<std::ptrdiff_t>(out_first));
    std::string error = check(op.out, [&](std::size_t i) {
      return i >= out_first && i < out_first + count ? tol[i - out_first] : 0.0;
    });
    return error.empty() ? rescale(op.out) : error;
  }

  const case_plan& plan_;
  std::vector<mg::device_group> groups_;
  std::array<std::optional<mg::distributed_vector<T>>, vector_slots> dev_;
  std::array<std::vector<T>, vector_slots> host_;
  int device_ = 0;
  std::map<const mg::device_pool*, std::size_t> pool_start_;
};

template <class T>
run_result execute(const case_plan& plan, const std::vector<operation>& ops) {
  std::size_t at = 0;
  try {
    runner<T> r(plan);
    for (; at < ops.size(); ++at) {
      std::string error = r.apply(ops[at]);
      if (!error.empty()) return {false, at, error};
    }
    std::string error = r.finish();
    if (!error.empty()) return {false, ops.size(), error};
  } catch (const std::exception& e) {
    return {false, at, concat("threw ", e.what())};
  }
  return {};
}

}  // namespace stress
