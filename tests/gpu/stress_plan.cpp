// Drawing, checking and describing the plans of the randomized differential test.
#include "stress_plan.hpp"

#include <algorithm>
#include <array>
#include <list>
#include <mutex>
#include <random>
#include <sstream>
#include <utility>

namespace stress {

std::string_view name(element e) {
  switch (e) {
    case element::int32: return "int";
    case element::int64: return "long long";
    case element::float32: return "float";
    case element::float64: return "double";
    case element::record: return "record";
  }
  return "?";
}

std::string_view name(binary_op op) {
  switch (op) {
    case binary_op::sum: return "cuda::std::plus<>";
    case binary_op::sum_unknown: return "plus_unknown";
    case binary_op::sum_commutative: return "mg::commutative(plus_unknown)";
    case binary_op::maximum: return "cuda::maximum<>";
    case binary_op::take_right: return "take_right";
  }
  return "?";
}

std::string_view unary_name(int fn) {
  static constexpr std::string_view names[] = {"affine_step", "negate", "bit_mix"};
  return fn >= 0 && fn < 3 ? names[fn] : "?";
}

std::string_view binary_name(int fn) {
  static constexpr std::string_view names[] = {"add", "minus_twice", "larger"};
  return fn >= 0 && fn < 3 ? names[fn] : "?";
}

std::string describe(const group_spec& g) {
  std::ostringstream out;
  out << "{";
  for (std::size_t i = 0; i < g.devices.size(); ++i) out << (i ? "," : "") << g.devices[i];
  out << "}";
  if (g.peers == mg::peer_policy::host_staged) out << " host staged";
  if (g.merge == mg::merge_policy::host_mapped) out << ", merge host mapped";
  if (g.merge == mg::merge_policy::device) out << ", merge on device";
  if (g.dispatch == mg::dispatch_policy::worker_threads) out << ", worker threads";
  if (g.dispatch == mg::dispatch_policy::graph) out << ", graph replay";
  return out.str();
}

mg::device_group group_for(const group_spec& spec);

namespace {

std::mutex cache_mutex;
std::list<std::pair<group_spec, mg::device_group>> cache;
constexpr std::size_t cache_capacity = 8;

}  // namespace

mg::device_group group_for(const group_spec& spec) {
  std::lock_guard lock(cache_mutex);
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    if (it->first == spec) {
      cache.splice(cache.begin(), cache, it);
      return cache.front().second;
    }
  }
  mg::group_options options;
  options.peers = spec.peers;
  options.merge = spec.merge;
  options.dispatch = spec.dispatch;
  cache.emplace_front(spec, mg::device_group(spec.devices, options));
  if (cache.size() > cache_capacity) cache.pop_back();
  return cache.front().second;
}

void drop_groups() {
  std::lock_guard lock(cache_mutex);
  cache.clear();
}

namespace {

/// Sizes and groups of the vectors while a sequence runs: all that drawing and checking
/// operations needs.
struct shape_state {
  std::array<bool, vector_slots> exists{};
  std::array<std::size_t, vector_slots> size{};
  std::array<int, vector_slots> group{-1, -1, -1};
};

bool slot_ok(int s) { return s >= 0 && s < vector_slots; }

bool disjoint(std::size_t a, std::size_t b, std::size_t len) { return a + len <= b || b + len <= a; }

/// Applies `op` to the shapes; false (and `st` unspecified) when `op` is not valid there.
bool step(const case_plan& plan, shape_state& st, const operation& op) {
  auto exists = [&](int s) { return slot_ok(s) && st.exists[s]; };
  auto fits = [&](int s, std::size_t first, std::size_t last) { return first <= last && last <= st.size[s]; };
  const std::size_t len = op.last >= op.first ? op.last - op.first : 0;
  switch (op.kind) {
    case op_kind::construct_from_host:
    case op_kind::construct_filled:
      if (!slot_ok(op.out) || op.group < 0 || op.group >= static_cast<int>(plan.groups.size())) return false;
      st.exists[op.out] = true;
      st.size[op.out] = op.n;
      st.group[op.out] = op.group;
      return true;
    case op_kind::copy_construct:
      if (!exists(op.in) || !slot_ok(op.out) || op.out == op.in) return false;
      st.exists[op.out] = true;
      st.size[op.out] = st.size[op.in];
      st.group[op.out] = st.group[op.in];
      return true;
    case op_kind::copy_assign:
      if (!exists(op.in) || !exists(op.out)) return false;
      st.size[op.out] = st.size[op.in];
      st.group[op.out] = st.group[op.in];
      return true;
    case op_kind::move_assign:
      if (!exists(op.in) || !exists(op.out) || op.in == op.out) return false;
      st.size[op.out] = st.size[op.in];
      st.group[op.out] = st.group[op.in];
      st.size[op.in] = 0;
      return true;
    case op_kind::swap_vectors:
      if (!exists(op.in) || !exists(op.out) || op.in == op.out) return false;
      std::swap(st.size[op.in], st.size[op.out]);
      std::swap(st.group[op.in], st.group[op.out]);
      return true;
    case op_kind::copy_whole:
      return exists(op.in) && exists(op.out) && st.size[op.in] == st.size[op.out];
    case op_kind::copy_range:
      return exists(op.in) && exists(op.out) && fits(op.in, op.first, op.last) &&
             op.out_first + len <= st.size[op.out] && (op.in != op.out || disjoint(op.first, op.out_first, len));
    case op_kind::resize:
      if (!exists(op.out)) return false;
      st.size[op.out] = op.n;
      return true;
    case op_kind::fill_whole:
      return exists(op.out);
    case op_kind::fill_range:
      return exists(op.out) && fits(op.out, op.first, op.last);
    case op_kind::write_element:
      return exists(op.out) && op.first < st.size[op.out];
    case op_kind::read_element:
      return exists(op.in) && op.first < st.size[op.in];
    case op_kind::transform_whole:
    case op_kind::inclusive_scan_whole:
    case op_kind::exclusive_scan_whole:
      return exists(op.in) && exists(op.out) && st.size[op.in] == st.size[op.out];
    case op_kind::transform_range:
    case op_kind::inclusive_scan_range:
    case op_kind::exclusive_scan_range:
      return exists(op.in) && exists(op.out) && fits(op.in, op.first, op.last) &&
             op.out_first + len <= st.size[op.out] &&
             (op.in != op.out || op.out_first == op.first || disjoint(op.first, op.out_first, len));
    case op_kind::transform2_whole:
      return exists(op.in) && exists(op.in2) && exists(op.out) && st.size[op.in] == st.size[op.out] &&
             st.size[op.in2] == st.size[op.out];
    case op_kind::transform2_range:
      return exists(op.in) && exists(op.in2) && exists(op.out) && fits(op.in, op.first, op.last) &&
             op.first2 + len <= st.size[op.in2] && op.out_first + len <= st.size[op.out] &&
             (op.in != op.out || op.out_first == op.first || disjoint(op.first, op.out_first, len)) &&
             (op.in2 != op.out || op.out_first == op.first2 || disjoint(op.first2, op.out_first, len));
    case op_kind::reduce_whole:
      return exists(op.in);
    case op_kind::reduce_range:
      return exists(op.in) && fits(op.in, op.first, op.last);
  }
  return false;
}

class drawer {
 public:
  drawer(std::uint64_t seed, const limits& lim) : engine_(seed), lim_(lim) {}

  std::uint64_t next() { return engine_(); }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(engine_() % n); }
  bool chance(int percent) { return below(100) < static_cast<std::size_t>(percent); }
  template <class C>
  auto pick(const C& c) {
    return c[below(std::size(c))];
  }

  group_spec group() {
    group_spec g;
    const std::size_t r = below(10);
    const std::size_t slots = r < 3 ? 1 : r < 5 ? 2 : r < 7 ? 3 : r < 8 ? 4 : r < 9 ? 5 + below(3) : 8;
    const int count = std::max(1, lim_.device_count);
    const std::size_t mode = below(3);
    const int start = static_cast<int>(below(static_cast<std::size_t>(count)));
    for (std::size_t s = 0; s < slots; ++s) {
      if (mode == 0)
        g.devices.push_back((start + static_cast<int>(s)) % count);  // round robin
      else if (mode == 1)
        g.devices.push_back(static_cast<int>(below(static_cast<std::size_t>(count))));  // any, repeats
      else
        g.devices.push_back(start);  // all on one device
    }
    g.peers = chance(25) ? mg::peer_policy::host_staged : mg::peer_policy::automatic;
    const std::size_t m = below(10);
    g.merge = m < 6 ? mg::merge_policy::automatic : m < 8 ? mg::merge_policy::host_mapped : mg::merge_policy::device;
    const std::size_t d = below(4);
    g.dispatch = d == 0 ? mg::dispatch_policy::worker_threads : d == 1 ? mg::dispatch_policy::graph
                                                                       : mg::dispatch_policy::caller_thread;
    return g;
  }

  /// 0..max_size, biased to the edges: tiny sizes, around the slot count, primes, powers
  /// of two and their neighbours (CUB tile boundaries), with some uniform draws.
  std::size_t size(std::size_t slots) {
    static constexpr std::size_t primes[] = {2,     3,     5,      7,      11,     13,      31,      61,
                                             127,   257,   521,    1021,   2053,   4099,    8191,    16381,
                                             65521, 131071, 262139, 524287, 1048573, 2097143, 4194301};
    const std::size_t k = std::max<std::size_t>(slots, 1);
    const std::size_t r = below(100);
    std::size_t n;
    if (r < 15) {
      n = below(4);
    } else if (r < 35) {
      const std::size_t near_k[] = {k - 1, k, k + 1, 2 * k - 1, 2 * k + 1, 3 * k};
      n = pick(near_k);
    } else if (r < 55) {
      n = pick(primes);
    } else if (r < 70) {
      n = (std::size_t{1} << (6 + below(17))) + below(3) - 1;
    } else if (r < 95) {
      n = below(5001);
    } else {
      n = below(lim_.max_size + 1);
    }
    return std::min(n, lim_.max_size);
  }

  /// An index in [0, size], biased to the ends and to segment boundaries of a block layout
  /// over `slots` slots.
  std::size_t index(std::size_t size, std::size_t slots) {
    const std::size_t r = below(10);
    if (r == 0) return 0;
    if (r == 1) return size;
    if (r == 2) return std::min<std::size_t>(1, size);
    if (r == 3) return size > 0 ? size - 1 : 0;
    if (r < 6) {
      const std::size_t k = std::max<std::size_t>(slots, 1);
      const std::size_t s = below(k + 1);
      std::size_t boundary = s * (size / k) + std::min(s, size % k);
      const std::size_t shift = below(3);
      if (shift == 0 && boundary > 0) --boundary;
      if (shift == 2 && boundary < size) ++boundary;
      return boundary;
    }
    return below(size + 1);
  }

  /// A range of a vector of `size` elements: whole, a prefix, a suffix or any; rarely empty.
  void range(std::size_t size, std::size_t slots, std::size_t& first, std::size_t& last) {
    const std::size_t r = below(4);
    if (r == 0) {
      first = 0;
      last = size;
      return;
    }
    first = r == 2 ? 0 : index(size, slots);
    last = r == 3 ? size : index(size, slots);
    if (first > last) std::swap(first, last);
    if (first == last && size > 0 && !chance(15)) {
      if (first == size) first = below(size);
      last = first + 1 + below(size - first);
    }
  }

  binary_op reduce_op(element type) {
    if (type == element::record) {
      const binary_op ops[] = {binary_op::sum_unknown, binary_op::sum_unknown, binary_op::sum_commutative,
                               binary_op::take_right};
      return pick(ops);
    }
    const binary_op ops[] = {binary_op::sum, binary_op::sum, binary_op::sum_unknown, binary_op::sum_commutative,
                             binary_op::maximum, binary_op::take_right};
    return pick(ops);
  }

  binary_op scan_op(element type) {
    if (type == element::record) {
      const binary_op ops[] = {binary_op::sum_unknown, binary_op::sum_unknown, binary_op::take_right};
      return pick(ops);
    }
    const binary_op ops[] = {binary_op::sum, binary_op::sum, binary_op::sum_unknown, binary_op::maximum,
                             binary_op::take_right};
    return pick(ops);
  }

 private:
  std::mt19937_64 engine_;
  limits lim_;
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64: neighbouring seeds give unrelated streams
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct draw_context {
  drawer& d;
  const case_plan& plan;
  const shape_state& st;

  std::size_t slots_of(int vector) const {
    const int g = st.group[vector];
    return g >= 0 ? plan.groups[static_cast<std::size_t>(g)].devices.size() : 1;
  }
  int existing() const {
    std::vector<int> live;
    for (int s = 0; s < vector_slots; ++s)
      if (st.exists[s]) live.push_back(s);
    return live.empty() ? -1 : live[d.below(live.size())];
  }
  int any_slot() const { return static_cast<int>(d.below(vector_slots)); }
  /// A live vector of the same size as `v` (often `v` itself), or -1.
  int same_size_as(int v) const {
    std::vector<int> same;
    for (int s = 0; s < vector_slots; ++s)
      if (st.exists[s] && st.size[s] == st.size[v]) same.push_back(s);
    return same.empty() ? -1 : same[d.below(same.size())];
  }
  /// Usually a live vector of at least `n` elements (when there is one), else any.
  int holding(std::size_t n) const {
    std::vector<int> big;
    for (int s = 0; s < vector_slots; ++s)
      if (st.exists[s] && st.size[s] >= n) big.push_back(s);
    return big.empty() || d.chance(20) ? existing() : big[d.below(big.size())];
  }
  int any_group() const { return static_cast<int>(d.below(plan.groups.size())); }
  /// An output start for a range of `len` elements in vector `out`: often the input's own
  /// start (in place or lined up), else an edge or a random place.
  std::size_t out_start(int out, std::size_t len, std::size_t in_first) const {
    const std::size_t room = st.size[out] - len;
    if (in_first <= room && d.chance(40)) return in_first;
    return std::min(d.index(room, slots_of(out)), room);
  }
};

/// One or two operations (a construction may come first so that a whole-vector operation
/// has an output of the right size, often on another group).
std::vector<operation> draw_operations(drawer& d, const case_plan& plan, const shape_state& st) {
  draw_context c{d, plan, st};
  struct weighted {
    op_kind kind;
    int weight;
  };
  static constexpr weighted kinds[] = {
      {op_kind::construct_from_host, 6}, {op_kind::construct_filled, 4},     {op_kind::copy_construct, 3},
      {op_kind::copy_assign, 3},         {op_kind::move_assign, 2},          {op_kind::swap_vectors, 2},
      {op_kind::copy_whole, 5},          {op_kind::copy_range, 6},           {op_kind::resize, 5},
      {op_kind::fill_whole, 2},          {op_kind::fill_range, 4},           {op_kind::transform_whole, 4},
      {op_kind::transform_range, 5},     {op_kind::transform2_whole, 3},     {op_kind::transform2_range, 4},
      {op_kind::reduce_whole, 6},        {op_kind::reduce_range, 6},         {op_kind::inclusive_scan_whole, 4},
      {op_kind::inclusive_scan_range, 5}, {op_kind::exclusive_scan_whole, 4}, {op_kind::exclusive_scan_range, 5},
      {op_kind::write_element, 4},       {op_kind::read_element, 3},
  };
  int total = 0;
  for (const auto& k : kinds) total += k.weight;
  int pick = static_cast<int>(d.below(static_cast<std::size_t>(total)));
  op_kind kind = kinds[0].kind;
  for (const auto& k : kinds) {
    if (pick < k.weight) {
      kind = k.kind;
      break;
    }
    pick -= k.weight;
  }

  std::vector<operation> ops;
  operation op;
  op.kind = kind;
  op.seed = d.next();
  // A whole-vector operation whose output is another vector: sometimes construct that
  // output first with the input's size, on any group.
  auto output_like = [&](int in) {
    int out = c.same_size_as(in);
    if (d.chance(45) || out < 0) {
      int fresh = c.any_slot();
      if (fresh != in) {
        operation make;
        make.kind = op_kind::construct_filled;
        make.out = fresh;
        make.group = c.any_group();
        make.n = st.size[in];
        make.seed = d.next();
        ops.push_back(make);
        return fresh;
      }
    }
    return out < 0 ? in : out;
  };

  switch (kind) {
    case op_kind::construct_from_host:
    case op_kind::construct_filled:
      op.out = c.any_slot();
      op.group = c.any_group();
      op.n = d.size(plan.groups[static_cast<std::size_t>(op.group)].devices.size());
      break;
    case op_kind::copy_construct:
      op.in = c.existing();
      op.out = c.any_slot();
      break;
    case op_kind::copy_assign:
    case op_kind::move_assign:
    case op_kind::swap_vectors:
      op.in = c.existing();
      op.out = c.existing();
      break;
    case op_kind::copy_whole:
    case op_kind::transform_whole:
    case op_kind::inclusive_scan_whole:
    case op_kind::exclusive_scan_whole:
      op.in = c.existing();
      if (op.in < 0) break;
      op.out = output_like(op.in);
      if (kind == op_kind::transform_whole) op.fn = static_cast<int>(d.below(3));
      if (kind == op_kind::inclusive_scan_whole || kind == op_kind::exclusive_scan_whole)
        op.fn = static_cast<int>(d.scan_op(plan.type));
      break;
    case op_kind::transform2_whole:
      op.in = c.existing();
      if (op.in < 0) break;
      op.in2 = c.same_size_as(op.in);
      op.out = output_like(op.in);
      op.fn = static_cast<int>(d.below(3));
      break;
    case op_kind::copy_range:
    case op_kind::transform_range:
    case op_kind::inclusive_scan_range:
    case op_kind::exclusive_scan_range:
    case op_kind::transform2_range: {
      op.in = c.existing();
      if (op.in < 0) break;
      d.range(st.size[op.in], c.slots_of(op.in), op.first, op.last);
      op.out = c.holding(op.last - op.first);
      std::size_t len = std::min(op.last - op.first, st.size[op.out]);
      if (kind == op_kind::transform2_range) {
        op.in2 = c.holding(len);
        len = std::min(len, st.size[op.in2]);
        op.first2 = op.in2 == op.in && d.chance(50) ? op.first
                                                   : std::min(d.index(st.size[op.in2] - len, c.slots_of(op.in2)),
                                                              st.size[op.in2] - len);
        op.fn = static_cast<int>(d.below(3));
      }
      op.last = op.first + len;
      op.out_first = c.out_start(op.out, len, op.first);
      if (op.out == op.in && kind != op_kind::copy_range && !disjoint(op.first, op.out_first, len))
        op.out_first = op.first;  // in place
      if (op.out == op.in2 && !disjoint(op.first2, op.out_first, len)) op.out_first = op.first2;
      if (kind == op_kind::transform_range) op.fn = static_cast<int>(d.below(3));
      if (kind == op_kind::inclusive_scan_range || kind == op_kind::exclusive_scan_range)
        op.fn = static_cast<int>(d.scan_op(plan.type));
      break;
    }
    case op_kind::resize:
      op.out = c.existing();
      if (op.out < 0) break;
      op.n = d.chance(30) ? st.size[op.out] + d.below(5) : d.size(c.slots_of(op.out));
      if (d.chance(15) && st.size[op.out] > 0) op.n = st.size[op.out] - 1;
      break;
    case op_kind::fill_whole:
      op.out = c.existing();
      break;
    case op_kind::fill_range:
      op.out = c.existing();
      if (op.out >= 0) d.range(st.size[op.out], c.slots_of(op.out), op.first, op.last);
      break;
    case op_kind::write_element:
      op.out = c.existing();
      if (op.out >= 0 && st.size[op.out] > 0) op.first = std::min(d.index(st.size[op.out] - 1, c.slots_of(op.out)), st.size[op.out] - 1);
      break;
    case op_kind::read_element:
      op.in = c.existing();
      if (op.in >= 0 && st.size[op.in] > 0) op.first = std::min(d.index(st.size[op.in] - 1, c.slots_of(op.in)), st.size[op.in] - 1);
      break;
    case op_kind::reduce_whole:
      op.in = c.existing();
      op.fn = static_cast<int>(d.reduce_op(plan.type));
      break;
    case op_kind::reduce_range:
      op.in = c.existing();
      if (op.in >= 0) d.range(st.size[op.in], c.slots_of(op.in), op.first, op.last);
      op.fn = static_cast<int>(d.reduce_op(plan.type));
      break;
  }
  ops.push_back(op);
  return ops;
}

std::string v(int slot) { return "v" + std::to_string(slot); }
std::string at(int slot, std::size_t i) { return v(slot) + ".begin() + " + std::to_string(i); }
std::string cat(int slot, std::size_t i) { return v(slot) + ".cbegin() + " + std::to_string(i); }

std::string describe_one(const case_plan& plan, const shape_state& st, const operation& op) {
  std::ostringstream out;
  out << "#" << op.index << " ";
  switch (op.kind) {
    case op_kind::construct_from_host:
      out << v(op.out) << " = distributed_vector(" << op.n << " random host elements, g" << op.group << ")";
      break;
    case op_kind::construct_filled:
      out << v(op.out) << " = distributed_vector(" << op.n << ((op.seed & 1) ? ", a value" : "");
      if (halo_width(op) > 0) out << ", mg::halo{" << halo_width(op) << "}";
      out << ", g" << op.group << ")";
      break;
    case op_kind::copy_construct:
      out << v(op.out) << " = distributed_vector(" << v(op.in) << ")  [copy construction]";
      break;
    case op_kind::copy_assign: out << v(op.out) << " = " << v(op.in); break;
    case op_kind::move_assign: out << v(op.out) << " = std::move(" << v(op.in) << ")"; break;
    case op_kind::swap_vectors: out << "swap(" << v(op.out) << ", " << v(op.in) << ")"; break;
    case op_kind::copy_whole: out << "mg::copy(" << v(op.in) << ", " << v(op.out) << ")"; break;
    case op_kind::copy_range:
      out << "mg::copy(" << cat(op.in, op.first) << ", " << cat(op.in, op.last) << ", " << at(op.out, op.out_first) << ")";
      break;
    case op_kind::resize: out << v(op.out) << ".resize(" << op.n << ")"; break;
    case op_kind::fill_whole: out << "mg::fill(" << v(op.out) << ", a value)"; break;
    case op_kind::fill_range:
      out << "mg::fill(" << at(op.out, op.first) << ", " << at(op.out, op.last) << ", a value)";
      break;
    case op_kind::transform_whole:
      out << "mg::transform(" << v(op.in) << ", " << v(op.out) << ", " << unary_name(op.fn) << ")";
      break;
    case op_kind::transform_range:
      out << "mg::transform(" << cat(op.in, op.first) << ", " << cat(op.in, op.last) << ", " << at(op.out, op.out_first)
          << ", " << unary_name(op.fn) << ")";
      break;
    case op_kind::transform2_whole:
      out << "mg::transform(" << v(op.in) << ", " << v(op.in2) << ", " << v(op.out) << ", " << binary_name(op.fn) << ")";
      break;
    case op_kind::transform2_range:
      out << "mg::transform(" << cat(op.in, op.first) << ", " << cat(op.in, op.last) << ", " << cat(op.in2, op.first2)
          << ", " << at(op.out, op.out_first) << ", " << binary_name(op.fn) << ")";
      break;
    case op_kind::reduce_whole:
      out << "mg::reduce(" << v(op.in) << ", init, " << name(static_cast<binary_op>(op.fn)) << ")";
      break;
    case op_kind::reduce_range:
      out << "mg::reduce(" << cat(op.in, op.first) << ", " << cat(op.in, op.last) << ", init, "
          << name(static_cast<binary_op>(op.fn)) << ")";
      break;
    case op_kind::inclusive_scan_whole:
      out << "mg::inclusive_scan(" << v(op.in) << ", " << v(op.out) << ", " << name(static_cast<binary_op>(op.fn)) << ")";
      break;
    case op_kind::exclusive_scan_whole:
      out << "mg::exclusive_scan(" << v(op.in) << ", " << v(op.out) << ", init, " << name(static_cast<binary_op>(op.fn))
          << ")";
      break;
    case op_kind::inclusive_scan_range:
      out << "mg::inclusive_scan(" << cat(op.in, op.first) << ", " << cat(op.in, op.last) << ", "
          << at(op.out, op.out_first) << ", " << name(static_cast<binary_op>(op.fn)) << ")";
      break;
    case op_kind::exclusive_scan_range:
      out << "mg::exclusive_scan(" << cat(op.in, op.first) << ", " << cat(op.in, op.last) << ", "
          << at(op.out, op.out_first) << ", init, " << name(static_cast<binary_op>(op.fn)) << ")";
      break;
    case op_kind::write_element: out << v(op.out) << "[" << op.first << "] = a value"; break;
    case op_kind::read_element: out << "read " << v(op.in) << "[" << op.first << "]"; break;
  }
  // The vectors involved, as they were before the operation.
  std::vector<int> involved;
  for (int s : {op.out, op.in, op.in2})
    if (slot_ok(s) && st.exists[s] && std::find(involved.begin(), involved.end(), s) == involved.end())
      involved.push_back(s);
  if (!involved.empty()) {
    out << "    [";
    for (std::size_t i = 0; i < involved.size(); ++i) {
      const int s = involved[i];
      out << (i ? ", " : "") << v(s) << ": " << st.size[s] << " elements on g" << st.group[s];
    }
    out << "]";
  }
  (void)plan;
  return out.str();
}

}  // namespace

case_plan make_plan(std::uint64_t seed, const limits& lim) {
  drawer d(mix(seed), lim);
  case_plan plan;
  plan.seed = seed;
  plan.type = static_cast<element>(d.below(5));
  const std::size_t r = d.below(10);
  const std::size_t group_count = r < 4 ? 1 : r < 8 ? 2 : 3;
  for (std::size_t g = 0; g < group_count; ++g) plan.groups.push_back(d.group());

  shape_state st;
  const std::size_t target = lim.min_ops + d.below(lim.max_ops - lim.min_ops + 1);
  operation first;
  first.kind = op_kind::construct_from_host;
  first.out = 0;
  first.group = 0;
  first.n = d.size(plan.groups[0].devices.size());
  first.seed = d.next();
  step(plan, st, first);
  plan.ops.push_back(first);
  for (std::size_t attempts = 0; plan.ops.size() < target && attempts < 50 * target; ++attempts) {
    std::vector<operation> drawn = draw_operations(d, plan, st);
    shape_state trial = st;
    bool ok = true;
    for (const auto& op : drawn) ok = ok && step(plan, trial, op);
    if (!ok) continue;
    st = trial;
    for (auto& op : drawn) {
      op.index = plan.ops.size();
      plan.ops.push_back(op);
    }
  }
  return plan;
}

bool valid_sequence(const case_plan& plan, const std::vector<operation>& ops) {
  shape_state st;
  for (const auto& op : ops)
    if (!step(plan, st, op)) return false;
  return true;
}

std::string describe(const case_plan& plan, const std::vector<operation>& ops) {
  std::ostringstream out;
  shape_state st;
  for (const auto& op : ops) {
    out << "  " << describe_one(plan, st, op) << "\n";
    step(plan, st, op);
  }
  return out.str();
}

run_result run(const case_plan& plan, const std::vector<operation>& ops) {
  switch (plan.type) {
    case element::int32: return execute<int>(plan, ops);
    case element::int64: return execute<long long>(plan, ops);
    case element::float32: return execute<float>(plan, ops);
    case element::float64: return execute<double>(plan, ops);
    case element::record: return execute<record>(plan, ops);
  }
  return {false, 0, "unknown element type"};
}

}  // namespace stress
