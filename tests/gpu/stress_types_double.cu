// The stress executor for double elements: one element type per translation unit, so that
// the five compile in parallel.
#include "stress_execute.cuh"

namespace stress {
template run_result execute<double>(const case_plan&, const std::vector<operation>&);
}  // namespace stress
