// Distributed N-D arrays against host references: construction and host transfers, halo
// exchange (faces, edges, corners; periodic, fixed and none), stencils (5/9-point in 2-D, 7/27-point
// in 3-D) in both schedules, the algorithm set, copies between layouts, for_each_tile, replicated
// scalars over 100 iterations without a host wait, and bad input. Group shapes: 1, 2, 4 and 8
// slots of device 0, 4 slots host staged, 3 slots with graph dispatch, and every device when
// there are several.
#include <multigpu/mdarray.hpp>
#include <multigpu/multigpu.hpp>
#include <multigpu/testing/schedule.hpp>

#include "../md_index_model.hpp"
#include "gate_kernel.cuh"
#include "support.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace test;
template <std::size_t R>
using idx = mg::md_index<R>;
using bk = mg::boundary_kind;

struct md_shape {
  std::string name;
  mg::device_group group;
};

const std::vector<md_shape>& md_shapes() {
  static const std::vector<md_shape> all = [] {
    std::vector<md_shape> s;
    s.push_back({"{0}", mg::device_group({0})});
    s.push_back({"{0,0}", mg::device_group({0, 0})});
    s.push_back({"{0 x4}", mg::device_group(std::vector<int>(4, 0))});
    s.push_back({"{0 x8}", mg::device_group(std::vector<int>(8, 0))});
    s.push_back({"{0 x4} host staged", mg::device_group(std::vector<int>(4, 0), {mg::peer_policy::host_staged})});
    // Three slots: a grid of 3 x 1; and a group whose collectives replay graphs (the N-D calls
    // enqueue as under caller_thread).
    s.push_back({"{0,0,0} graph", mg::device_group({0, 0, 0}, {.dispatch = mg::dispatch_policy::graph})});
    if (mg::visible_device_count() > 1) {
      s.push_back({"all devices", mg::device_group::all()});
      s.push_back({"all devices host staged", mg::device_group::all({mg::peer_policy::host_staged})});
    }
    return s;
  }();
  return all;
}

template <std::size_t R>
std::size_t count_of(const idx<R>& n) {
  return mg::detail::product(n);
}

using md_model::for_each_index;
using md_model::linear;

/// The host model of what a (possibly outer) cell at global g holds: the element after periodic
/// wrapping; outside a non-periodic dimension, the lowest such dimension decides: fixed gives
/// its value, none gives `untouched` (what the halo held before).
template <class T, std::size_t R>
T host_value(const idx<R>& n, const std::vector<T>& data, const std::array<long long, R>& g,
             const std::array<mg::md_boundary<T>, R>& b, const T& untouched) {
  idx<R> at{};
  for (std::size_t d = 0; d < R; ++d) {
    const auto nd = static_cast<long long>(n[d]);
    if (g[d] >= 0 && g[d] < nd) {
      at[d] = static_cast<std::size_t>(g[d]);
    } else if (b[d].kind == bk::periodic) {
      at[d] = static_cast<std::size_t>(((g[d] % nd) + nd) % nd);
    } else {
      return b[d].kind == bk::fixed ? b[d].value : untouched;
    }
  }
  return data[linear(n, at)];
}

/// A tile's whole padded storage, on the host.
template <class T, std::size_t R>
std::vector<T> padded_storage(const mg::distributed_mdarray<T, R>& a, std::size_t slot) {
  const auto t = a.tile(slot);
  std::vector<T> host(t.with_halo.size());
  mg::device_guard guard(t.device);
  EXPECT_EQ(cudaStreamSynchronize(t.stream), cudaSuccess);
  if (!host.empty())
    EXPECT_EQ(cudaMemcpy(host.data(), t.with_halo.data_handle(), host.size() * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
  return host;
}

template <class T>
T element_from(std::size_t k) {
  if constexpr (std::is_same_v<T, vec3>)
    return vec3{static_cast<double>(k), 0.5 * static_cast<double>(k), -static_cast<double>(k)};
  else
    return static_cast<T>(k % 1000003 + 1);
}

template <class T, std::size_t R>
std::vector<T> numbered(const idx<R>& n) {
  std::vector<T> v(count_of(n));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = element_from<T>(k);
  return v;
}

// ---- construction and host transfers -------------------------------------------------------------

template <class T>
class MdArrayTyped : public ::testing::Test {};
using md_types = ::testing::Types<int, double, vec3>;
TYPED_TEST_SUITE(MdArrayTyped, md_types);

TYPED_TEST(MdArrayTyped, HostRoundTripAndElementsIn2DAnd3D) {
  using T = TypeParam;
  for (const auto& g : md_shapes()) {
    for (const idx<2>& n : {idx<2>{1, 1}, idx<2>{1, 7}, idx<2>{2, 3}, idx<2>{13, 11}, idx<2>{101, 67}}) {
      SCOPED_TRACE(testing::Message() << g.name << " 2-D " << n[0] << "x" << n[1]);
      const auto host = numbered<T>(n);
      mg::mdarray_options<T, 2> o;
      o.halo = {1, 2};
      std::optional<mg::distributed_mdarray<T, 2>> maybe;
      try {
        maybe.emplace(n, std::span<const T>(host), g.group, o);
      } catch (const std::length_error&) {
        // The default grid leaves a tile one column wide (1 x 7 or 2 x 3 over 3, 4 or 8
        // slots), narrower than a halo of 2: the same round trip with a halo of 1.
        o.halo = {1, 1};
        maybe.emplace(n, std::span<const T>(host), g.group, o);
      }
      auto& a = *maybe;
      EXPECT_TRUE(a.to_host() == host);
      EXPECT_TRUE(a.get({n[0] - 1, n[1] - 1}) == host.back());
      a.set({0, n[1] - 1}, element_from<T>(999));
      EXPECT_TRUE(a.get({0, n[1] - 1}) == element_from<T>(999));
      const mg::distributed_mdarray<T, 2> filled(n, element_from<T>(5), g.group);
      for (const T& x : filled.to_host()) ASSERT_TRUE(x == element_from<T>(5));
      // Every tile's interior view sees the elements at its offset.
      std::size_t seen = 0;
      for (std::size_t s = 0; s < a.tile_count(); ++s) {
        const auto t = a.tile(s);
        seen += t.interior.size();
        EXPECT_EQ(t.with_halo.size() == 0, t.empty());
        if (!t.empty()) {
          EXPECT_EQ(t.interior.extent(0) + 2 * o.halo[0], t.with_halo.extent(0));
          EXPECT_EQ(t.interior.extent(1) + 2 * o.halo[1], t.with_halo.extent(1));
          EXPECT_EQ(t.interior.stride(0), t.with_halo.extent(1));
          EXPECT_EQ(t.interior.data_handle(),
                    t.with_halo.data_handle() + o.halo[0] * t.with_halo.extent(1) + o.halo[1]);
        }
      }
      EXPECT_EQ(seen, count_of(n));
    }
    for (const idx<3>& n : {idx<3>{1, 1, 1}, idx<3>{2, 3, 1}, idx<3>{7, 5, 11}, idx<3>{13, 17, 19}}) {
      SCOPED_TRACE(testing::Message() << g.name << " 3-D " << n[0] << "x" << n[1] << "x" << n[2]);
      const auto host = numbered<T>(n);
      mg::mdarray_options<T, 3> o;
      o.halo = {1, 1, 1};
      mg::distributed_mdarray<T, 3> a(n, std::span<const T>(host), g.group, o);
      EXPECT_TRUE(a.to_host() == host);
      EXPECT_TRUE(a.get({n[0] / 2, n[1] / 2, n[2] / 2}) == host[linear(n, {n[0] / 2, n[1] / 2, n[2] / 2})]);
      std::vector<T> back(host.size());
      a.copy_to_host(back);
      EXPECT_TRUE(back == host);
    }
  }
}

// ---- halo exchange ---------------------------------------------------------------------------------

/// Runs exchange_halos and checks every padded cell of every tile against host_value.
template <class T, std::size_t R>
bool check_exchange(const mg::device_group& group, const idx<R>& n, const idx<R>& w,
                    const std::array<mg::md_boundary<T>, R>& b, bool split) {
  mg::mdarray_options<T, R> o;
  o.halo = w;
  o.boundaries = b;
  const auto host = numbered<T>(n);
  std::optional<mg::distributed_mdarray<T, R>> maybe;
  try {
    maybe.emplace(n, std::span<const T>(host), group, o);
  } catch (const std::length_error&) {
    return false;  // a halo wider than some tile: the CPU tests check when that is right
  }
  auto& a = *maybe;
  if (split) {
    mg::exchange_halos_begin(a);
    mg::exchange_halos_end(a);
  } else {
    mg::exchange_halos(a);
  }
  mg::exchange_halos(a);  // twice: the second reuses buffers and events
  for (std::size_t s = 0; s < a.tile_count(); ++s) {
    const auto t = a.tile(s);
    if (t.empty()) continue;
    const auto got = padded_storage(a, s);
    idx<R> padded{};
    for (std::size_t d = 0; d < R; ++d) padded[d] = t.with_halo.extent(d);
    bool ok = true;
    for_each_index<R>(padded, [&](const idx<R>& at) {
      if (!ok) return;
      std::array<long long, R> g{};
      for (std::size_t d = 0; d < R; ++d)
        g[d] = static_cast<long long>(t.offset[d]) + static_cast<long long>(at[d]) - static_cast<long long>(w[d]);
      const T want = host_value<T, R>(n, host, g, b, T{});
      const T have = got[linear(padded, at)];
      if (!(have == want)) {
        std::string global;
        for (std::size_t d = 0; d < R; ++d) global += (d > 0 ? ", " : "") + std::to_string(g[d]);
        ADD_FAILURE() << "slot " << s << " padded cell (" << mg::detail::format_index(at) << "), global (" << global
                      << "): " << have << " != " << want;
        ok = false;
      }
    });
    if (!ok) return true;
  }
  EXPECT_TRUE(a.to_host() == host);  // the interior is untouched
  return true;
}

TEST(MdArrayHalo, TwoDimensionsFacesEdgesAndCorners) {
  using T = double;
  const mg::md_boundary<T> periodic{bk::periodic}, fixed{bk::fixed, -7.5}, none{bk::none};
  const std::vector<std::array<mg::md_boundary<T>, 2>> boundaries{
      {periodic, periodic}, {fixed, fixed}, {none, none}, {periodic, fixed}, {fixed, periodic}, {none, periodic}};
  std::size_t ran = 0;
  for (const auto& g : md_shapes())
    for (const auto& b : boundaries)
      for (std::size_t w : {1u, 2u, 3u})
        for (const idx<2>& n : {idx<2>{1, 1}, idx<2>{3, 2}, idx<2>{13, 11}, idx<2>{37, 41}}) {
          SCOPED_TRACE(testing::Message() << g.name << " " << n[0] << "x" << n[1] << " width " << w << " boundaries "
                                          << static_cast<int>(b[0].kind) << "," << static_cast<int>(b[1].kind));
          ran += check_exchange<T, 2>(g.group, n, {w, w}, b, w == 2) ? 1 : 0;
        }
  EXPECT_GT(ran, 100u);
  // Unequal widths and one dimension without a halo.
  for (const auto& g : md_shapes()) {
    check_exchange<int, 2>(g.group, {29, 31}, {1, 3}, {{{bk::periodic}, {bk::fixed, 4}}}, false);
    check_exchange<int, 2>(g.group, {29, 31}, {0, 2}, {{{bk::periodic}, {bk::periodic}}}, true);
  }
}

TEST(MdArrayHalo, ThreeDimensions) {
  using T = long long;
  const mg::md_boundary<T> periodic{bk::periodic}, fixed{bk::fixed, -3}, none{bk::none};
  const std::vector<std::array<mg::md_boundary<T>, 3>> boundaries{
      {periodic, periodic, periodic}, {fixed, fixed, fixed}, {none, periodic, fixed}};
  std::size_t ran = 0;
  for (const auto& g : md_shapes())
    for (const auto& b : boundaries)
      for (std::size_t w : {1u, 2u})
        for (const idx<3>& n : {idx<3>{1, 1, 1}, idx<3>{2, 3, 1}, idx<3>{7, 5, 11}, idx<3>{13, 9, 17}})
          ran += check_exchange<T, 3>(g.group, n, {w, w, w}, b, w == 1) ? 1 : 0;
  EXPECT_GT(ran, 40u);
  for (const auto& g : md_shapes()) check_exchange<T, 3>(g.group, {9, 11, 13}, {1, 2, 3}, {periodic, fixed, periodic}, false);
}

// ---- stencils --------------------------------------------------------------------------------------

/// Weighted sum over the offsets of radius r: every offset of the box (9/27-point for r = 1),
/// or only those on the axes (5/7-point). Distinct weights, so a swapped offset shows.
template <std::size_t R>
struct weighted_stencil {
  int radius;
  bool box;
  template <class Read>
  __host__ __device__ long long sum(Read&& read) const {
    long long total = 0;
    const int side = 2 * radius + 1;
    int count = 1;
    for (std::size_t d = 0; d < R; ++d) count *= side;
    for (int code = 0; code < count; ++code) {
      int off[R];
      int rest = code;
      int nonzero = 0;
      for (std::size_t d = R; d-- > 0;) {
        off[d] = rest % side - radius;
        rest /= side;
        nonzero += off[d] != 0 ? 1 : 0;
      }
      if (!box && nonzero > 1) continue;
      total += static_cast<long long>(code + 1) * read(off);
    }
    return total;
  }
  template <class Acc>
  __device__ long long operator()(const Acc& a) const {
    return sum([&](const int* off) -> long long {
      if constexpr (R == 1)
        return a(off[0]);
      else if constexpr (R == 2)
        return a(off[0], off[1]);
      else if constexpr (R == 3)
        return a(off[0], off[1], off[2]);
      else
        return a(off[0], off[1], off[2], off[3]);
    });
  }
};

template <std::size_t R>
std::vector<long long> host_stencil(const idx<R>& n, const std::vector<long long>& in,
                                    const std::array<mg::md_boundary<long long>, R>& b, const weighted_stencil<R>& f) {
  std::vector<long long> out(in.size());
  for_each_index<R>(n, [&](const idx<R>& i) {
    out[linear(n, i)] = f.sum([&](const int* off) {
      std::array<long long, R> g{};
      for (std::size_t d = 0; d < R; ++d) g[d] = static_cast<long long>(i[d]) + off[d];
      return host_value<long long, R>(n, in, g, b, 0);
    });
  });
  return out;
}

/// Three ping-pong steps of the stencil, each against the host.
template <std::size_t R>
bool check_stencil(const mg::device_group& group, const idx<R>& n, std::size_t w,
                   const std::array<mg::md_boundary<long long>, R>& b, bool box, mg::stencil_schedule schedule) {
  mg::mdarray_options<long long, R> o;
  o.halo.fill(w);
  o.boundaries = b;
  std::vector<long long> host(count_of(n));
  for (std::size_t k = 0; k < host.size(); ++k) host[k] = static_cast<long long>((k * 2654435761u) % 19) - 9;
  std::optional<mg::distributed_mdarray<long long, R>> in, out;
  try {
    in.emplace(n, std::span<const long long>(host), group, o);
    out.emplace(n, group, in->options());
  } catch (const std::length_error&) {
    return false;
  }
  const weighted_stencil<R> f{static_cast<int>(w), box};
  for (int step = 0; step < 3; ++step) {
    mg::stencil_transform(*in, *out, f, schedule);
    host = host_stencil<R>(n, host, b, f);
    // Keep the values small: the next step multiplies them again.
    mg::transform(*out, *out, [] __device__(long long x) { return x % 1000; });
    for (auto& x : host) x %= 1000;
    std::swap(*in, *out);
  }
  const auto got = in->to_host();
  for (std::size_t k = 0; k < got.size(); ++k)
    if (got[k] != host[k]) {
      ADD_FAILURE() << "element " << k << ": " << got[k] << " != " << host[k];
      break;
    }
  return true;
}

TEST(MdArrayStencil, TwoDimensionsFiveAndNinePoint) {
  const mg::md_boundary<long long> periodic{bk::periodic}, fixed{bk::fixed, 3};
  std::size_t ran = 0;
  for (const auto& g : md_shapes())
    for (const auto& b : std::vector<std::array<mg::md_boundary<long long>, 2>>{{periodic, periodic}, {fixed, fixed}, {fixed, periodic}})
      for (bool box : {false, true})
        for (std::size_t w : {1u, 2u, 3u})
          for (const idx<2>& n : {idx<2>{1, 1}, idx<2>{3, 2}, idx<2>{31, 37}, idx<2>{64, 129}})
            for (auto schedule : {mg::stencil_schedule::overlapped, mg::stencil_schedule::exchange_first}) {
              SCOPED_TRACE(testing::Message() << g.name << " " << n[0] << "x" << n[1] << " width " << w
                                              << (box ? " box" : " star") << " boundary " << static_cast<int>(b[0].kind)
                                              << (schedule == mg::stencil_schedule::overlapped ? " overlapped" : ""));
              ran += check_stencil<2>(g.group, n, w, b, box, schedule) ? 1 : 0;
            }
  EXPECT_GT(ran, 100u);
}

TEST(MdArrayStencil, ThreeDimensionsSevenAnd27Point) {
  const mg::md_boundary<long long> periodic{bk::periodic}, fixed{bk::fixed, -2};
  std::size_t ran = 0;
  for (const auto& g : md_shapes())
    for (const auto& b : std::vector<std::array<mg::md_boundary<long long>, 3>>{{periodic, periodic, periodic}, {fixed, periodic, fixed}})
      for (bool box : {false, true})
        for (std::size_t w : {1u, 2u})
          for (const idx<3>& n : {idx<3>{1, 1, 1}, idx<3>{2, 3, 1}, idx<3>{13, 11, 17}, idx<3>{20, 9, 33}}) {
            SCOPED_TRACE(testing::Message() << g.name << " " << n[0] << "x" << n[1] << "x" << n[2] << " width " << w
                                            << (box ? " box" : " star"));
            ran += check_stencil<3>(g.group, n, w, b, box, mg::stencil_schedule::overlapped) ? 1 : 0;
            ran += check_stencil<3>(g.group, n, w, b, box, mg::stencil_schedule::exchange_first) ? 1 : 0;
          }
  EXPECT_GT(ran, 50u);
}

TEST(MdArrayStencil, OneAndFourDimensions) {
  // The rank is a template parameter throughout: 1-D and 4-D arrays exchange and compute as
  // 2-D and 3-D ones do.
  const mg::md_boundary<long long> periodic{bk::periodic}, fixed{bk::fixed, 5};
  for (const auto& g : md_shapes()) {
    SCOPED_TRACE(g.name);
    EXPECT_TRUE((check_exchange<long long, 1>(g.group, {101}, {2}, {periodic}, false)));
    EXPECT_TRUE((check_exchange<long long, 1>(g.group, {101}, {3}, {fixed}, true)));
    EXPECT_TRUE((check_stencil<1>(g.group, {97}, 2, {periodic}, true, mg::stencil_schedule::overlapped)));
    EXPECT_TRUE((check_exchange<long long, 4>(g.group, {5, 4, 6, 7}, {1, 1, 1, 1}, {periodic, fixed, periodic, fixed},
                                              false)));
    EXPECT_TRUE((check_stencil<4>(g.group, {5, 4, 6, 7}, 1, {periodic, fixed, periodic, fixed}, false,
                                  mg::stencil_schedule::overlapped)));
  }
}

/// reach[a][b]: node b depends, through stream order and events, on node a.
std::vector<std::vector<bool>> reachability(const mg::testing::schedule_graph& graph) {
  const std::size_t n = graph.nodes.size();
  std::vector<std::vector<std::size_t>> next(n);
  for (const auto& [a, b] : graph.edges) next[a].push_back(b);
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (std::size_t from = 0; from < n; ++from) {
    std::vector<std::size_t> todo{from};
    while (!todo.empty()) {
      const std::size_t at = todo.back();
      todo.pop_back();
      for (std::size_t b : next[at])
        if (!reach[from][b]) {
          reach[from][b] = true;
          todo.push_back(b);
        }
    }
  }
  return reach;
}

TEST(MdArrayStencil, TheInteriorDoesNotWaitForTheHalos) {
  // The promise of the overlapped schedule, read from the recorded schedule: no interior launch
  // depends on any part of the exchange, every boundary launch depends on its tile's unpack;
  // exchange_first makes every launch wait for the exchange.
  for (const auto& g : md_shapes()) {
    if (g.group.size() < 2) continue;
    SCOPED_TRACE(g.name);
    mg::mdarray_options<long long, 2> o;
    o.halo = {1, 1};
    o.boundaries = {{{bk::periodic}, {bk::periodic}}};
    mg::distributed_mdarray<long long, 2> a({64, 64}, 1LL, g.group, o), b({64, 64}, 0LL, g.group, a.options());
    const weighted_stencil<2> f{1, true};
    mg::stencil_transform(a, b, f);  // builds the exchange's buffers and streams
    g.group.synchronize();
    for (auto schedule : {mg::stencil_schedule::overlapped, mg::stencil_schedule::exchange_first}) {
      mg::testing::schedule_recording recording;
      mg::stencil_transform(a, b, f, schedule);
      const auto graph = recording.graph();
      const auto reach = reachability(graph);
      const auto is_exchange = [&](std::size_t k) { return graph.nodes[k].label.rfind("mdarray halo", 0) == 0; };
      std::size_t interior = 0, boundary = 0, unpacks = 0;
      for (std::size_t k = 0; k < graph.nodes.size(); ++k) {
        const std::string& label = graph.nodes[k].label;
        unpacks += label == "mdarray halo unpack" ? 1 : 0;
        if (label == "mdarray stencil interior") {
          ++interior;
          for (std::size_t e = 0; e < graph.nodes.size(); ++e)
            EXPECT_FALSE(is_exchange(e) && reach[e][k]) << "the interior waits for " << graph.nodes[e].label;
        }
        if (label == "mdarray stencil boundary" || label == "mdarray stencil") {
          ++boundary;
          bool after_unpack = false;
          for (std::size_t e = 0; e < graph.nodes.size(); ++e)
            after_unpack = after_unpack || (graph.nodes[e].label == "mdarray halo unpack" && reach[e][k] &&
                                            graph.nodes[e].stream != graph.nodes[k].stream);
          EXPECT_TRUE(after_unpack) << label << " does not wait for the halos";
        }
      }
      EXPECT_EQ(unpacks, g.group.size());
      if (schedule == mg::stencil_schedule::overlapped) {
        EXPECT_EQ(interior, g.group.size());
        EXPECT_GE(boundary, g.group.size());
      } else {
        EXPECT_EQ(interior, 0u);
        EXPECT_EQ(boundary, g.group.size());
      }
    }
  }
}

// ---- algorithms ------------------------------------------------------------------------------------

struct times_three_plus {
  long long k;
  __host__ __device__ long long operator()(long long x) const { return 3 * x + k; }
};
struct plus_ll {
  __host__ __device__ long long operator()(long long a, long long b) const { return a + b; }
};
struct max_ll {
  __host__ __device__ long long operator()(long long a, long long b) const { return a > b ? a : b; }
};
struct square_ll {
  __host__ __device__ long long operator()(long long x) const { return x * x; }
};
struct difference {
  __host__ __device__ long long operator()(long long a, long long b) const { return a - b; }
};

TEST(MdArrayAlgorithms, FillTransformReduceEqualAgainstTheHost) {
  for (const auto& g : md_shapes())
    for (const idx<2>& n : {idx<2>{1, 1}, idx<2>{2, 3}, idx<2>{97, 89}}) {
      SCOPED_TRACE(testing::Message() << g.name << " " << n[0] << "x" << n[1]);
      std::vector<long long> host(count_of(n));
      for (std::size_t k = 0; k < host.size(); ++k) host[k] = static_cast<long long>((k * 7919) % 1001) - 500;
      mg::mdarray_options<long long, 2> o;
      o.halo = {1, 1};
      o.boundaries = {{{bk::fixed, 77}, {bk::periodic}}};
      mg::distributed_mdarray<long long, 2> a(n, std::span<const long long>(host), g.group, o);
      mg::distributed_mdarray<long long, 2> b(n, g.group, a.options());
      mg::transform(a, b, times_three_plus{4});
      std::vector<long long> want(host.size());
      for (std::size_t k = 0; k < host.size(); ++k) want[k] = 3 * host[k] + 4;
      EXPECT_EQ(b.to_host(), want);
      // In place, and per slot.
      mg::transform(b, b, mg::per_slot{[](std::size_t) { return times_three_plus{-1}; }});
      for (auto& x : want) x = 3 * x - 1;
      EXPECT_EQ(b.to_host(), want);
      mg::distributed_mdarray<long long, 2> c(n, g.group, a.options());
      mg::transform(b, a, c, difference{});
      for (std::size_t k = 0; k < host.size(); ++k) want[k] -= host[k];
      EXPECT_EQ(c.to_host(), want);
      EXPECT_EQ(mg::reduce(c, 10LL, plus_ll{}), std::accumulate(want.begin(), want.end(), 10LL));
      EXPECT_EQ(mg::reduce(c, std::numeric_limits<long long>::min(), max_ll{}),
                *std::max_element(want.begin(), want.end()));
      long long squares = 0;
      for (long long x : want) squares += x * x;
      EXPECT_EQ(mg::transform_reduce(c, 0LL, plus_ll{}, square_ll{}), squares);
      // equal: same layout, one element off, another grid.
      mg::distributed_mdarray<long long, 2> copy_of_c(c);
      EXPECT_TRUE(mg::equal(c, copy_of_c));
      copy_of_c.set({n[0] - 1, 0}, want[linear(n, {n[0] - 1, 0})] + 1);
      EXPECT_FALSE(mg::equal(c, copy_of_c));
      mg::mdarray_options<long long, 2> other_grid;
      other_grid.grid = {1, g.group.size()};
      mg::distributed_mdarray<long long, 2> d(n, std::span<const long long>(want), g.group, other_grid);
      EXPECT_TRUE(mg::equal(c, d));
      mg::fill(c, 5LL);
      for (long long x : c.to_host()) ASSERT_EQ(x, 5);
      // The halo is not an element: fill leaves it, exchange fills it.
      mg::exchange_halos(c);
      if (n[0] > 0 && !c.tile(0).empty()) {
        const auto storage = padded_storage(c, 0);
        EXPECT_EQ(storage.front(), 77);  // the fixed boundary of dimension 0 at the corner
      }
    }
}

TEST(MdArrayAlgorithms, CopyBetweenLayoutsAndGroups) {
  const idx<3> n{19, 12, 7};
  std::vector<double> host(count_of(n));
  for (std::size_t k = 0; k < host.size(); ++k) host[k] = 0.25 * static_cast<double>(k);
  for (const auto& from : md_shapes())
    for (const auto& to : md_shapes()) {
      SCOPED_TRACE(testing::Message() << from.name << " -> " << to.name);
      mg::mdarray_options<double, 3> slabs;
      slabs.grid = {from.group.size(), 1, 1};
      slabs.halo = {1, 0, 2};
      mg::mdarray_options<double, 3> pencils;
      const std::size_t k = to.group.size();
      pencils.grid = k % 2 == 0 ? idx<3>{1, 2, k / 2} : idx<3>{1, 1, k};
      mg::distributed_mdarray<double, 3> a(n, std::span<const double>(host), from.group, slabs);
      mg::distributed_mdarray<double, 3> b(n, -1.0, to.group, pencils);
      mg::copy(a, b);
      EXPECT_EQ(b.to_host(), host);
      mg::distributed_mdarray<double, 3> back(n, 0.0, from.group);
      mg::copy(b, back);
      EXPECT_EQ(back.to_host(), host);
    }
}

// ---- for_each_tile ---------------------------------------------------------------------------------

template <class Span>
__global__ void number_tile(Span interior, std::size_t o0, std::size_t o1, std::size_t n1) {
  const std::size_t j = blockIdx.x * blockDim.x + threadIdx.x;
  const std::size_t i = blockIdx.y;
  if (i < interior.extent(0) && j < interior.extent(1)) interior(i, j) = static_cast<long long>((o0 + i) * n1 + o1 + j);
}

TEST(MdArrayTiles, ForEachTileSeesItsPlaceAndStreams) {
  for (const auto& g : md_shapes())
    for (const idx<2>& n : {idx<2>{1, 3}, idx<2>{50, 70}}) {
      SCOPED_TRACE(g.name);
      mg::mdarray_options<long long, 2> o;
      o.halo = {2, 1};
      mg::distributed_mdarray<long long, 2> a(n, -1LL, g.group, o);
      std::size_t calls = 0;
      mg::for_each_tile(a, [&](const mg::md_tile<long long, 2>& t) {
        ++calls;
        int current = -1;
        EXPECT_EQ(cudaGetDevice(&current), cudaSuccess);
        EXPECT_EQ(current, t.device);
        EXPECT_EQ(t.stream, g.group.stream(t.slot));
        const dim3 grid(static_cast<unsigned>((t.interior.extent(1) + 127) / 128), static_cast<unsigned>(t.interior.extent(0)));
        number_tile<<<grid, 128, 0, t.stream>>>(t.interior, t.offset[0], t.offset[1], n[1]);
        EXPECT_EQ(cudaGetLastError(), cudaSuccess);
      });
      std::size_t non_empty = 0;
      for (std::size_t s = 0; s < a.tile_count(); ++s) non_empty += a.tile(s).empty() ? 0 : 1;
      EXPECT_EQ(calls, non_empty);
      std::vector<long long> want(count_of(n));
      std::iota(want.begin(), want.end(), 0LL);
      EXPECT_EQ(a.to_host(), want);
      // The halos were not written by the interior view: a corner still holds the fill value.
      EXPECT_EQ(padded_storage(a, 0).front(), -1);
    }
}

// ---- replicated scalars ----------------------------------------------------------------------------

/// Holds every slot of a group behind a kernel that waits for the host: calls that return while
/// it is shut did not wait for the device.
class gate {
 public:
  explicit gate(const mg::device_group& group) : group_(group) {
    mg::device_guard guard(group.device(0));
    MULTIGPU_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(int), cudaHostAllocMapped));
    flags_[0] = 0;
    flags_[1] = 0;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MULTIGPU_CUDA_TRY(cudaEventCreateWithFlags(&after_, cudaEventDisableTiming));
    MULTIGPU_CUDA_TRY(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    int* device_flags = nullptr;
    MULTIGPU_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flags), flags_, 0));
    wait_for_gate<<<1, 1, 0, stream_>>>(device_flags, gate_timeout_cycles, device_flags + 1);
    MULTIGPU_CUDA_TRY(cudaGetLastError());
    MULTIGPU_CUDA_TRY(cudaEventRecord(after_, stream_));
    group.wait(after_);
  }
  /// Still shut: nothing enqueued since the gate can have run.
  bool work_pending() {
    mg::device_guard guard(group_.device(0));
    group_.record(done_, 0);
    return cudaEventQuery(done_) == cudaErrorNotReady;
  }
  void open() { static_cast<volatile int*>(flags_)[0] = 1; }
  bool timed_out() const { return static_cast<volatile int*>(flags_)[1] != 0; }
  ~gate() {
    open();
    group_.synchronize();
    mg::device_guard guard(group_.device(0));
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaEventDestroy(after_), cudaSuccess);
    EXPECT_EQ(cudaEventDestroy(done_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
    EXPECT_EQ(cudaFreeHost(flags_), cudaSuccess);
  }

 private:
  mg::device_group group_;
  int* flags_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t after_ = nullptr;
  cudaEvent_t done_ = nullptr;
};

using u64 = unsigned long long;
struct plus_u64 {
  __host__ __device__ u64 operator()(u64 a, u64 b) const { return a + b; }
};
struct max_u64 {
  __host__ __device__ u64 operator()(u64 a, u64 b) const { return a > b ? a : b; }
};
/// x -> 3 x + sum + max, reading both scalars from the slot's copies.
struct mix_in {
  mg::replicated_ref<u64> sum;
  mg::replicated_ref<u64> max;
  __device__ u64 operator()(u64 x) const { return 3 * x + sum.get() + (max.get() >> 7); }
};
/// A periodic 5-point sum plus the replicated sum: reads halos and the scalar.
struct smooth_plus {
  mg::replicated_ref<u64> sum;
  template <class Acc>
  __device__ u64 operator()(const Acc& a) const {
    return a(0, 0) + 2 * a(-1, 0) + 3 * a(1, 0) + 5 * a(0, -1) + 7 * a(0, 1) + sum.get();
  }
};

TEST(MdArrayReplicated, HundredIterationsWithoutAHostWaitMatchTheHostLoop) {
  const idx<2> n{37, 23};
  for (const auto& g : md_shapes()) {
    SCOPED_TRACE(g.name);
    std::vector<u64> host(count_of(n));
    for (std::size_t k = 0; k < host.size(); ++k) host[k] = k * 11 + 1;
    mg::mdarray_options<u64, 2> o;
    o.halo = {1, 1};
    o.boundaries = {{{bk::periodic}, {bk::periodic}}};
    mg::distributed_mdarray<u64, 2> a(n, std::span<const u64>(host), g.group, o);
    mg::distributed_mdarray<u64, 2> b(n, g.group, a.options());
    mg::replicated<u64> sum(g.group), max(g.group);
    const auto iterate = [&] {
      mg::reduce_replicated(a, u64{0}, plus_u64{}, sum);
      mg::reduce_replicated(a, u64{0}, max_u64{}, max);
      mg::transform(a, a, mg::per_slot{[&](std::size_t s) { return mix_in{sum.ref(s), max.ref(s)}; }});
      mg::reduce_replicated(a, u64{0}, plus_u64{}, sum);
      mg::stencil_transform(a, b, mg::per_slot{[&](std::size_t s) { return smooth_plus{sum.ref(s)}; }});
      std::swap(a, b);
    };
    const auto host_iterate = [&] {
      u64 s = 0, m = 0;
      for (u64 x : host) {
        s += x;
        m = std::max(m, x);
      }
      for (u64& x : host) x = 3 * x + s + (m >> 7);
      s = 0;
      for (u64 x : host) s += x;
      std::vector<u64> next(host.size());
      const auto at = [&](long long i, long long j) {
        const auto n0 = static_cast<long long>(n[0]), n1 = static_cast<long long>(n[1]);
        return host[static_cast<std::size_t>(((i % n0 + n0) % n0) * n1 + ((j % n1 + n1) % n1))];
      };
      for (long long i = 0; i < static_cast<long long>(n[0]); ++i)
        for (long long j = 0; j < static_cast<long long>(n[1]); ++j)
          next[static_cast<std::size_t>(i) * n[1] + static_cast<std::size_t>(j)] =
              at(i, j) + 2 * at(i - 1, j) + 3 * at(i + 1, j) + 5 * at(i, j - 1) + 7 * at(i, j + 1) + s;
      host = next;
    };
    // Once before the gate, so that streams, pools and staging blocks exist.
    iterate();
    host_iterate();
    g.group.synchronize();
    {
      // A few iterations behind the shut gate prove that none waits for the device; the rest
      // follow with the gate open and still no host wait. All 99 behind the gate would queue
      // over a thousand launches and many more copies and event waits per stream, and a full
      // launch queue blocks the enqueuing host until the gate times out.
      constexpr int gated = 3;
      gate shut(g.group);
      for (int it = 1; it <= gated; ++it) iterate();
      EXPECT_TRUE(shut.work_pending()) << "a call waited for the device";
      shut.open();
      for (int it = gated + 1; it < 100; ++it) iterate();
      g.group.synchronize();
      EXPECT_FALSE(shut.timed_out());
    }
    for (int it = 1; it < 100; ++it) host_iterate();
    EXPECT_EQ(a.to_host(), host);
    u64 s = 0;
    for (u64 x : host) s += x;
    // Every slot's copy agrees.
    mg::reduce_replicated(a, u64{0}, plus_u64{}, sum);
    for (std::size_t slot = 0; slot < g.group.size(); ++slot) EXPECT_EQ(sum.get(slot), s) << "slot " << slot;
  }
}

TEST(MdArrayReplicated, VectorsToo) {
  for (const auto& g : md_shapes())
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{100003}}) {
      SCOPED_TRACE(testing::Message() << g.name << " n=" << n);
      std::vector<u64> host(n);
      for (std::size_t k = 0; k < n; ++k) host[k] = k * k + 3;
      mg::distributed_vector<u64> v(host, g.group);
      mg::replicated<u64> r(g.group);
      mg::reduce_replicated(v, u64{5}, plus_u64{}, r);
      const u64 want = std::accumulate(host.begin(), host.end(), u64{5});
      for (std::size_t s = 0; s < g.group.size(); ++s) EXPECT_EQ(r.get(s), want);
      EXPECT_EQ(mg::reduce_replicated(v, u64{0}, max_u64{}).get(g.group.size() - 1),
                n == 0 ? u64{0} : *std::max_element(host.begin(), host.end()));
    }
}

/// |x - y|, as the largest change between two iterates is measured.
struct distance_u64 {
  __host__ __device__ u64 operator()(u64 x, u64 y) const { return x > y ? x - y : y - x; }
};

TEST(MdArrayReplicated, TwoArraysWithoutAThirdMatchTheHost) {
  for (const auto& g : md_shapes())
    for (const idx<3>& n : {idx<3>{1, 1, 1}, idx<3>{2, 3, 1}, idx<3>{5, 7, 11}, idx<3>{17, 3, 29}}) {
      SCOPED_TRACE(testing::Message() << g.name << " " << n[0] << "x" << n[1] << "x" << n[2]);
      const std::size_t count = count_of(n);
      std::vector<u64> x(count), y(count);
      for (std::size_t k = 0; k < count; ++k) {
        x[k] = (k * 2654435761u) % 1000;
        y[k] = (k * 40503u + 17) % 1000;
      }
      mg::mdarray_options<u64, 3> o;
      o.halo = {1, 1, 1};
      mg::distributed_mdarray<u64, 3> a(n, std::span<const u64>(x), g.group, o);
      mg::distributed_mdarray<u64, 3> b(n, std::span<const u64>(y), g.group, o);
      mg::replicated<u64> largest(g.group), total(g.group);
      mg::transform_reduce_replicated(a, b, u64{0}, max_u64{}, distance_u64{}, largest);
      mg::transform_reduce_replicated(a, b, u64{7}, plus_u64{}, distance_u64{}, total);
      u64 want_largest = 0, want_total = 7;
      for (std::size_t k = 0; k < count; ++k) {
        const u64 d = x[k] > y[k] ? x[k] - y[k] : y[k] - x[k];
        want_largest = std::max(want_largest, d);
        want_total += d;
      }
      for (std::size_t s = 0; s < g.group.size(); ++s) {
        EXPECT_EQ(largest.get(s), want_largest) << "slot " << s;
        EXPECT_EQ(total.get(s), want_total) << "slot " << s;
      }
    }
  // Arrays of different extents are refused, naming the call, with the result untouched.
  mg::device_group g({0, 0});
  mg::distributed_mdarray<u64, 2> a({4, 5}, u64{1}, g), b({5, 4}, u64{1}, g);
  mg::replicated<u64> r(g, u64{42});
  try {
    mg::transform_reduce_replicated(a, b, u64{0}, plus_u64{}, distance_u64{}, r);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("transform_reduce_replicated"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.get(1), u64{42});
}

// ---- bad input -------------------------------------------------------------------------------------

struct same_float {
  __host__ __device__ float operator()(float x) const { return x; }
};
struct centre_only {
  __device__ float operator()(const mg::stencil_accessor<float, 2>& x) const { return x(0, 0); }
};

TEST(MdArrayErrors, TypedExceptionsThatSayWhatWasWrong) {
  const mg::device_group g(std::vector<int>(4, 0));
  {
    mg::mdarray_options<float, 2> o;
    o.grid = {2, 2};
    o.halo = {1, 3};
    try {
      mg::distributed_mdarray<float, 2> a({8, 5}, g, o);  // tiles 4 x 3 and 4 x 2
      FAIL() << "expected std::length_error";
    } catch (const std::length_error& e) {
      EXPECT_NE(std::string(e.what()).find("tile 1 (grid position (0, 1), extents 4 x 2)"), std::string::npos)
          << e.what();
    }
  }
  mg::distributed_mdarray<float, 2> a({10, 10}, g), b({10, 11}, g);
  EXPECT_THROW(mg::transform(a, b, same_float{}), std::invalid_argument);
  EXPECT_THROW(mg::copy(a, b), std::invalid_argument);
  EXPECT_THROW((void)mg::equal(a, b), std::invalid_argument);
  EXPECT_THROW(mg::stencil_transform(a, b, centre_only{}),
               std::invalid_argument);
  EXPECT_THROW(mg::stencil_transform(a, a, centre_only{}),
               std::invalid_argument);
  mg::mdarray_options<float, 2> other;
  other.grid = {1, 4};
  mg::distributed_mdarray<float, 2> c({10, 10}, g, other);
  try {
    mg::transform(a, c, same_float{});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("different grids"), std::string::npos) << e.what();
  }
  mg::mdarray_options<float, 2> three;
  three.grid = {3, 1};
  EXPECT_THROW((mg::distributed_mdarray<float, 2>({10, 10}, g, three)), std::invalid_argument);
  std::vector<float> short_host(99);
  EXPECT_THROW((mg::distributed_mdarray<float, 2>({10, 10}, std::span<const float>(short_host), g)),
               std::invalid_argument);
  EXPECT_THROW((void)a.get({10, 0}), std::out_of_range);
  EXPECT_THROW(a.set({0, 10}, 1.0f), std::out_of_range);
  EXPECT_THROW((void)a.tile(4), std::out_of_range);
  mg::replicated<float> elsewhere(mg::device_group({0}));
  EXPECT_THROW(mg::reduce_replicated(a, 0.0f, cuda::std::plus<>{}, elsewhere), std::invalid_argument);
  // Everything still works afterwards.
  mg::fill(a, 2.0f);
  EXPECT_EQ(mg::reduce(a, 0.0f, cuda::std::plus<>{}), 200.0f);
}

}  // namespace
