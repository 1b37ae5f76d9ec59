// multigpu-doctor: measures host <-> device copies (pinned and pageable), the peer links
// between GPUs and copy/kernel overlap, and says what is wrong and what to do about it.
// Exit status 0: every check passed; 1: a check failed; 2: the doctor could not run (no
// GPU, bad arguments, a CUDA failure while measuring).

#include "measure.hpp"
#include "options.hpp"
#include "probe.hpp"
#include "report.hpp"

#include <multigpu/core/error.hpp>
#include "verdicts.hpp"
#include <multigpu/runtime/device_group.hpp>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

namespace doctor = multigpu::doctor;

constexpr int cannot_run = 2;

int refuse(const doctor::options& o, const std::string& message) {
  std::cerr << "multigpu-doctor: " << message << "\n";
  if (o.json) doctor::print_json_error(std::cout, message);
  return cannot_run;
}

// The number of visible devices, or a message saying why there are none. The failure is
// the expected answer on a machine without a GPU, so it is reported, not thrown.
int visible_devices(std::string& why_none) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
    why_none = std::string(" (cudaGetDeviceCount: ") + cudaGetErrorName(status) + ": " +
               cudaGetErrorString(status) + ")";
  }
  if (count == 0) {
    const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
    int runtime = 0;
    const std::string runtime_text =
        cudaRuntimeGetVersion(&runtime) == cudaSuccess ? " for CUDA " + doctor::format_cuda_version(runtime) : "";
    why_none = "cannot run: no CUDA device is visible" + why_none +
               "; check that an NVIDIA driver" + runtime_text +
               " or newer is loaded (nvidia-smi) and that CUDA_VISIBLE_DEVICES (" +
               (mask ? "now '" + std::string(mask) + "'" : std::string("unset")) +
               ") does not hide the GPUs";
  }
  return count;
}

int run(const doctor::options& o) {
  std::string why_none;
  const int visible = visible_devices(why_none);
  if (visible == 0) return refuse(o, why_none);

  std::vector<int> ids = o.devices;
  if (ids.empty())
    for (int d = 0; d < visible; ++d) ids.push_back(d);
  for (int id : ids)
    if (id >= visible)
      return refuse(o, "cannot run: --devices names device " + std::to_string(id) + ", but " +
                           std::to_string(visible) + " device(s) are visible (ordinals 0 to " +
                           std::to_string(visible - 1) + ")");

  const multigpu::device_group group(
      ids, {o.host_staged ? multigpu::peer_policy::host_staged : multigpu::peer_policy::automatic});

  doctor::report r;
  r.settings = o;
  r.env = doctor::probe_environment(visible);
  doctor::measurements& m = r.data;
  m.transfer_bytes = o.size_mib << 20;
  m.repetitions = o.repetitions;
  m.host_staged = o.host_staged;
  m.launch_blocking = r.env.launch_blocking;
  m.devices = doctor::probe_devices(group);
  const std::vector<doctor::slot_pair> pairs = doctor::plan_pairs(group.devices());
  m.peers = doctor::probe_peers(group, pairs);
  {
    doctor::measurement_bench bench(group, m.transfer_bytes, o.repetitions);
    m.host_copies = bench.host_copies();
    m.peer_copies = bench.peer_copies(pairs);
    m.overlaps = bench.overlaps();
  }
  r.verdicts = doctor::judge(m);

  if (o.json)
    doctor::print_json(std::cout, r);
  else
    doctor::print_table(std::cout, r);
  return doctor::exit_status(r.verdicts);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> arguments(argv + 1, argv + argc);
  const doctor::parsed_options parsed = doctor::parse_options(arguments);
  if (!parsed.error.empty()) {
    std::cerr << "multigpu-doctor: " << parsed.error << "\nRun with --help for more information.\n";
    // Parsing stops at the first error: look for --json anywhere so machines still get JSON.
    if (std::find(arguments.begin(), arguments.end(), "--json") != arguments.end())
      doctor::print_json_error(std::cout, parsed.error);
    return cannot_run;
  }
  if (parsed.value.help) {
    std::cout << doctor::usage();
    return 0;
  }
  try {
    return run(parsed.value);
  } catch (const multigpu::out_of_memory& e) {
    return refuse(parsed.value, std::string("cannot run: out of memory while measuring (try a smaller "
                                            "--size-mib): ") + e.what());
  } catch (const multigpu::cuda_error& e) {
    return refuse(parsed.value, std::string("cannot run: a CUDA call failed: ") + e.what());
  } catch (const std::exception& e) {
    return refuse(parsed.value, std::string("cannot run: ") + e.what());
  }
}
