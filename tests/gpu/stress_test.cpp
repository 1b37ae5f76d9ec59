// The randomized differential test: random sequences of operations on distributed_vector
// (construct from host, copies within and between groups, resize, fill, transform, reduce,
// scans, element reads and writes), on random group shapes and element types, each checked
// against the same operations on std::vector (groups vary in shape, peer policy, merge
// route and dispatch; some vectors carry halos). A failing case is shrunk to the shortest
// prefix of its operations that still fails (then operations that do not matter are left
// out), and the report gives the seed that reproduces it.
//
// Environment:
//   MULTIGPU_STRESS_CASES=N     cases to run (default 120: the run in the normal GPU suite)
//   MULTIGPU_STRESS_SEED=S      case i runs seed S + i (default 20261202); a failure prints
//                               its case's seed, so SEED=<that> CASES=1 re-runs just it
//   MULTIGPU_STRESS_MAX_SIZE=M  largest vector (default 2^22 elements)
//   MULTIGPU_STRESS_MAX_OPS=K   most operations per case (default 16)
// A long run: MULTIGPU_STRESS_CASES=20000 MULTIGPU_STRESS_SEED=$RANDOM ./gpu_stress_tests
// (the seed depends on the number of visible GPUs: group shapes are drawn over them).

#include "stress_plan.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

namespace {

namespace mg = multigpu;
using namespace stress;

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 0);
  if (end == text || *end != '\0') {
    ADD_FAILURE() << name << "=" << text << " is not a number";
    return fallback;
  }
  return value;
}

struct shrunk {
  std::vector<operation> ops;
  run_result result;
  bool reproduced = false;
};

/// The shortest failing prefix of the plan's operations, then without each operation in
/// turn that the failure does not need (where the rest stays a valid sequence).
shrunk shrink(const case_plan& plan, const run_result& original) {
  for (std::size_t length = 1; length <= plan.ops.size(); ++length) {
    std::vector<operation> prefix(plan.ops.begin(), plan.ops.begin() + static_cast<std::ptrdiff_t>(length));
    run_result r = run(plan, prefix);
    if (r.ok) continue;
    shrunk best{prefix, r, true};
    for (std::size_t i = 0; i < best.ops.size() && best.ops.size() > 1;) {
      std::vector<operation> candidate = best.ops;
      candidate.erase(candidate.begin() + static_cast<std::ptrdiff_t>(i));
      if (valid_sequence(plan, candidate)) {
        run_result rc = run(plan, candidate);
        if (!rc.ok) {
          best.ops = std::move(candidate);
          best.result = std::move(rc);
          continue;
        }
      }
      ++i;
    }
    return best;
  }
  return {plan.ops, original, false};
}

std::string report(std::size_t case_number, const case_plan& plan, const shrunk& s, int devices) {
  std::ostringstream out;
  out << "multigpu stress: case " << case_number << " (seed " << plan.seed << ") failed\n"
      << "  element type " << name(plan.type) << ", " << devices << " visible device(s), groups:\n";
  for (std::size_t g = 0; g < plan.groups.size(); ++g) out << "    g" << g << " = " << describe(plan.groups[g]) << "\n";
  if (s.reproduced)
    out << "  shortest failing sequence (" << s.ops.size() << " of the case's " << plan.ops.size()
        << " operations):\n";
  else
    out << "  no prefix of the sequence failed again when re-run (a race or other nondeterminism?); "
           "the sequence that failed:\n";
  out << describe(plan, s.ops);
  if (s.result.failed_at < s.ops.size())
    out << "  failing operation: #" << s.ops[s.result.failed_at].index << "\n";
  else
    out << "  failing: the final check after the last operation\n";
  out << "  " << s.result.message << "\n"
      << "  reproduce: MULTIGPU_STRESS_SEED=" << plan.seed << " MULTIGPU_STRESS_CASES=1 gpu_stress_tests\n";
  return out.str();
}

TEST(Stress, RandomOperationSequencesMatchStdVector) {
  const std::uint64_t cases = env_number("MULTIGPU_STRESS_CASES", 120);
  const std::uint64_t seed = env_number("MULTIGPU_STRESS_SEED", 20261202);
  limits lim;
  lim.device_count = mg::visible_device_count();
  lim.max_size = env_number("MULTIGPU_STRESS_MAX_SIZE", lim.max_size);
  lim.max_ops = std::max<std::size_t>(lim.min_ops, env_number("MULTIGPU_STRESS_MAX_OPS", lim.max_ops));

  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, std::size_t> by_type;
  std::size_t operations = 0, failures = 0, run_cases = 0;
  for (std::uint64_t i = 0; i < cases; ++i) {
    const case_plan plan = make_plan(seed + i, lim);
    ++by_type[std::string(name(plan.type))];
    operations += plan.ops.size();
    ++run_cases;
    const run_result r = run(plan, plan.ops);
    if (r.ok) continue;
    ++failures;
    ADD_FAILURE() << report(static_cast<std::size_t>(i), plan, shrink(plan, r), lim.device_count);
    if (failures >= 3) {
      ADD_FAILURE() << "stopping after 3 failing cases";
      break;
    }
  }
  drop_groups();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream types;
  for (const auto& [type, count] : by_type) types << (types.tellp() > 0 ? ", " : "") << type << " " << count;
  std::printf("multigpu stress: %zu cases (%s), %zu operations, seeds %llu..%llu, %d visible device(s): "
              "%zu failing case(s) in %.1f s\n",
              run_cases, types.str().c_str(), operations, static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed + run_cases - 1), lim.device_count, failures, seconds);
  RecordProperty("cases", static_cast<int>(run_cases));
  RecordProperty("operations", static_cast<int>(operations));
  RecordProperty("failing_cases", static_cast<int>(failures));
}

// The plans themselves: valid as drawn, reproducible from their seed, and covering every
// kind of operation over a few hundred seeds (runs no GPU work).
TEST(StressPlans, AreValidReproducibleAndCoverEveryOperation) {
  limits lim;
  lim.device_count = std::max(1, mg::visible_device_count());
  std::map<op_kind, std::size_t> kinds;
  std::map<element, std::size_t> types;
  for (std::uint64_t s = 0; s < 500; ++s) {
    const case_plan plan = make_plan(s, lim);
    ASSERT_TRUE(valid_sequence(plan, plan.ops)) << "seed " << s << "\n" << describe(plan, plan.ops);
    ASSERT_GE(plan.ops.size(), lim.min_ops);
    const case_plan again = make_plan(s, lim);
    ASSERT_EQ(describe(plan, plan.ops), describe(again, again.ops)) << "seed " << s;
    for (const auto& g : plan.groups) {
      ASSERT_GE(g.devices.size(), 1u);
      ASSERT_LE(g.devices.size(), 8u);
      for (int d : g.devices) ASSERT_TRUE(d >= 0 && d < lim.device_count);
    }
    for (const auto& op : plan.ops) ++kinds[op.kind];
    ++types[plan.type];
  }
  EXPECT_EQ(kinds.size(), static_cast<std::size_t>(op_kind::read_element) + 1) << "some operation is never drawn";
  EXPECT_EQ(types.size(), 5u);
}

}  // namespace
