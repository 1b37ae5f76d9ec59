#pragma once
// Plans of the randomized differential test. From a seed, a case draws an element type, up
// to three group shapes and a sequence of operations on up to three vectors; the executor
// (stress_execute.cuh) runs them on distributed_vector and on std::vector and compares.
// Plans are plain data drawn before anything runs, so a failing case can be re-run on a
// prefix of its operations, or with operations left out, to find a short sequence that
// still fails.

#include <multigpu/runtime/device_group.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stress {

namespace mg = multigpu;

enum class element { int32, int64, float32, float64, record };
std::string_view name(element e);

/// The user struct among the element types (defined in stress_ops.cuh).
struct record;

struct group_spec {
  std::vector<int> devices;
  mg::peer_policy peers = mg::peer_policy::automatic;
  mg::merge_policy merge = mg::merge_policy::automatic;
  mg::dispatch_policy dispatch = mg::dispatch_policy::caller_thread;
  friend auto operator<=>(const group_spec&, const group_spec&) = default;
};
std::string describe(const group_spec& g);

/// The group for a spec. Groups are cached (a few, least recently used dropped) because
/// setting one up (peer checks, pools, streams) is not what is under test.
mg::device_group group_for(const group_spec& spec);
/// Drops the cached groups (before the process exits, while the CUDA runtime is up).
void drop_groups();

enum class op_kind {
  construct_from_host,  // out = vector(host data of n elements) on group
  construct_filled,     // out = vector(n) or vector(n, value) on group
  copy_construct,       // out = vector(in)
  copy_assign,          // out = in (out may be in)
  move_assign,          // out = std::move(in)
  swap_vectors,         // swap(out, in)
  copy_whole,           // copy(in, out)
  copy_range,           // copy(in[first, last), out at out_first)
  resize,               // out.resize(n)
  fill_whole,           // fill(out, value)
  fill_range,           // fill(out[first, last), value)
  transform_whole,      // transform(in, out, unary fn)
  transform_range,      // transform(in[first, last), out at out_first, unary fn)
  transform2_whole,     // transform(in, in2, out, binary fn)
  transform2_range,     // transform(in[first, last), in2 at first2, out at out_first, binary fn)
  reduce_whole,         // reduce(in, init, op)
  reduce_range,         // reduce(in[first, last), init, op)
  inclusive_scan_whole,
  inclusive_scan_range,
  exclusive_scan_whole,
  exclusive_scan_range,
  write_element,        // out[first] = value
  read_element,         // in[first], read three ways
};

/// Reduction and scan operators.
enum class binary_op {
  sum,              // cuda::std::plus<>: identity known to the library
  sum_unknown,      // the same sum through a functor the library does not know (ordered path)
  sum_commutative,  // that functor declared commutative with multigpu::commutative
  maximum,          // cuda::maximum<>
  take_right,       // (a, b) -> b: associative, not commutative; exposes any reordering
};
std::string_view name(binary_op op);
/// Element-wise functions: unary (0..2) and binary (0..2).
std::string_view unary_name(int fn);
std::string_view binary_name(int fn);

struct operation {
  op_kind kind;
  int out = -1;  // the vector written
  int in = -1;   // the vectors read
  int in2 = -1;
  int group = -1;
  std::size_t n = 0;
  std::size_t first = 0, last = 0;  // a range of `in` (of `out` for fills and writes)
  std::size_t first2 = 0;           // start of the second input range
  std::size_t out_first = 0;        // start of the output range
  int fn = 0;                       // unary or binary function, or binary_op
  std::uint64_t seed = 0;           // data and values
  std::size_t index = 0;            // position in the case's original sequence
};

/// construct_filled makes n copies of a value (odd seeds), or n value-initialised
/// elements, a quarter of those with a halo of this many elements (0: none).
inline std::size_t halo_width(const operation& op) {
  if (op.kind != op_kind::construct_filled || (op.seed & 1) || (op.seed >> 1) % 4 != 0) return 0;
  return 1 + (op.seed >> 3) % 3;
}

inline constexpr int vector_slots = 3;

struct case_plan {
  std::uint64_t seed = 0;
  element type = element::int32;
  std::vector<group_spec> groups;
  std::vector<operation> ops;
};

struct limits {
  std::size_t max_size = std::size_t{1} << 22;
  int device_count = 1;
  std::size_t min_ops = 4;
  std::size_t max_ops = 16;
};

case_plan make_plan(std::uint64_t seed, const limits& lim);

/// True when every operation of `ops` is valid in turn (vectors exist, ranges fit, sizes
/// agree where they must, outputs do not partly overlap their inputs).
bool valid_sequence(const case_plan& plan, const std::vector<operation>& ops);
/// One line per operation, with the sizes and groups of the vectors involved.
std::string describe(const case_plan& plan, const std::vector<operation>& ops);

struct run_result {
  bool ok = true;
  std::size_t failed_at = 0;  // position in the sequence run; its size means "in the final check"
  std::string message;
};

/// Runs `ops` of `plan` against std::vector; dispatches on the element type.
run_result run(const case_plan& plan, const std::vector<operation>& ops);

/// The executor, one explicit instantiation per element type (stress_types_*.cu).
template <class T>
run_result execute(const case_plan& plan, const std::vector<operation>& ops);

}  // namespace stress
