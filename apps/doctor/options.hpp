#pragma once
// The doctor's command line. Parsed before any CUDA call so that bad arguments are
// reported (exit status 2) on any machine, GPU or not.

#include <cstddef>
#include <string>
#include <vector>

namespace multigpu::doctor {

struct options {
  std::vector<int> devices;  ///< --devices 0,1 (repeats allowed); empty: every visible GPU
  bool host_staged = false;  ///< --host-staged: the group refuses peer access
  bool json = false;         ///< --json: machine-readable output
  bool help = false;
  std::size_t size_mib = 256;  ///< bytes per transfer, in MiB
  int repetitions = 3;         ///< timed runs per measurement (after one warm-up); the median counts
};

struct parsed_options {
  options value;
  std::string error;  ///< empty when the arguments were valid
};

parsed_options parse_options(const std::vector<std::string>& arguments);
std::string usage();

}  // namespace multigpu::doctor
