// multigpu demo: on every visible GPU (or the group given with --devices), prints the device
// group report, then runs transform, reduce and inclusive_scan with multigpu and with
// single-GPU Thrust, checks that the results agree and prints times and ratios.
//
//   demo [--devices 0,0,0,0] [--n 67108864] [--host-staged]
//
// --n is the length of each vector (default 2^26 floats, 256 MiB). Exit status: 0 when every
// result agrees with Thrust, 1 when one differs or a call fails (the reason on stderr), 2 on
// a bad command line, 77 when no GPU is visible (CTest's "skipped"; a script should treat it
// as "nothing to run on", not as a failure).

#include <multigpu/multigpu.hpp>

#include "require_gpu.hpp"
#include <CLI/CLI.hpp>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/copy.h>
#include <thrust/transform.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace mg = multigpu;

namespace {

struct saxpy {
  float a;
  __host__ __device__ float operator()(float x, float y) const { return a * x + y; }
};
/// Small integers as floats: sums of them are exact, so both results must agree bit for bit.
struct pattern {
  __host__ __device__ float operator()(float i) const { return static_cast<float>(static_cast<long long>(i) % 7 - 3); }
};

struct options {
  std::vector<int> devices;
  std::size_t n = std::size_t{1} << 26;
  bool host_staged = false;
};

// The command line, with CLI11. Exits with 0 after --help and with 2 on bad arguments.
options parse(int argc, char** argv) {
  options o;
  CLI::App app("Runs transform, reduce and inclusive_scan with multigpu and with single-GPU Thrust, "
               "checks that they agree and prints times and ratios.",
               "demo");
  app.add_option("--devices", o.devices, "CUDA ordinals, comma separated; repeats allowed (0,0,0,0). "
                                         "Default: every visible GPU.")
      ->delimiter(',')
      ->type_name("LIST")
      ->check(CLI::Range(0, 1 << 20).description(""));
  app.add_option("--n", o.n, "elements per vector")
      ->capture_default_str()
      ->type_name("ELEMENTS")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
            return digits ? "" : "takes a whole number of elements; got '" + text + "'";
          },
          ""));
  app.add_flag("--host-staged", o.host_staged, "refuse peer access: copies between devices go through pinned host memory");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  return o;
}

template <class F>
double time_ms(const mg::device_group& g, F&& f) {
  mg::device_guard guard(g.device(0));
  mg::event start(g.device(0), cudaEventDefault), stop(g.device(0), cudaEventDefault);
  start.record(g.stream(0));
  for (std::size_t s = 1; s < g.size(); ++s) g.order(0, s);
  f();
  for (std::size_t s = 1; s < g.size(); ++s) g.order(s, 0);
  stop.record(g.stream(0));
  stop.synchronize();
  return mg::event::elapsed_ms(start, stop);
}

template <class F>
double time_thrust_ms(cudaStream_t stream, F&& f) {
  mg::event start(0, cudaEventDefault), stop(0, cudaEventDefault);
  start.record(stream);
  f();
  stop.record(stream);
  stop.synchronize();
  return mg::event::elapsed_ms(start, stop);
}

/// Best of a few runs after a warm-up.
template <class F>
double best_of(F&& f) {
  f();
  double best = 1e30;
  for (int i = 0; i < 5; ++i) best = std::min(best, f());
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  options o = parse(argc, argv);
  if (const int status = examples::require_gpu("demo")) return status;
  try {
    mg::group_options group_opts;
    if (o.host_staged) group_opts.peers = mg::peer_policy::host_staged;
    mg::device_group group = o.devices.empty() ? mg::device_group::all(group_opts) : mg::device_group(o.devices, group_opts);
    std::printf("%s\n", group.describe().c_str());
    const std::size_t n = o.n;
    std::printf("n = %zu floats (%.1f MiB per vector)\n\n", n, n * 4.0 / (1 << 20));

    // x[i] = (i mod 7) - 3 and z = 2x + y with y = 0: every partial sum stays small, so
    // sums and prefix sums are exact in float whatever the order, and both sides must agree
    // bit for bit.
    mg::distributed_vector<float> x(n, group), y(n, 0.0f, group), z(n, group), scanned(n, group);
    mg::iota(x, 0.0f);
    mg::transform(x, x, pattern{});

    mg::device_guard guard(0);
    cudaStream_t stream = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    auto policy = thrust::cuda::par.on(stream);
    thrust::device_vector<float> tx(n), ty(n, 0.0f), tz(n), tscan(n);
    thrust::sequence(policy, tx.begin(), tx.end(), 0.0f);
    thrust::transform(policy, tx.begin(), tx.end(), tx.begin(), pattern{});

    float sum = 0, thrust_sum = 0;
    struct row {
      const char* name;
      double ours, theirs;
    };
    std::vector<row> rows;
    rows.push_back({"transform (saxpy)",
                    best_of([&] { return time_ms(group, [&] { mg::transform(x, y, z, saxpy{2.0f}); }); }),
                    best_of([&] {
                      return time_thrust_ms(stream, [&] {
                        thrust::transform(policy, tx.begin(), tx.end(), ty.begin(), tz.begin(), saxpy{2.0f});
                      });
                    })});
    rows.push_back({"reduce", best_of([&] { return time_ms(group, [&] { sum = mg::reduce(z); }); }),
                    best_of([&] { return time_thrust_ms(stream, [&] { thrust_sum = thrust::reduce(policy, tz.begin(), tz.end()); }); })});
    rows.push_back({"inclusive_scan", best_of([&] { return time_ms(group, [&] { mg::inclusive_scan(z, scanned); }); }),
                    best_of([&] {
                      return time_thrust_ms(stream, [&] { thrust::inclusive_scan(policy, tz.begin(), tz.end(), tscan.begin()); });
                    })});

    std::vector<float> ours = mg::to_vector(scanned), theirs(n);
    thrust::copy(tscan.begin(), tscan.end(), theirs.begin());
    std::vector<float> ours_z = mg::to_vector(z), theirs_z(n);
    thrust::copy(tz.begin(), tz.end(), theirs_z.begin());
    const bool transform_ok = ours_z == theirs_z;
    const bool reduce_ok = sum == thrust_sum;
    const bool scan_ok = ours == theirs;
    const bool ok[] = {transform_ok, reduce_ok, scan_ok};

    std::printf("%-20s %14s %20s %10s %8s\n", "operation", "multigpu (ms)", "Thrust, GPU 0 (ms)", "speed-up", "check");
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::printf("%-20s %14.3f %20.3f %9.2fx %8s\n", rows[i].name, rows[i].ours, rows[i].theirs,
                  rows[i].theirs / rows[i].ours, ok[i] ? "agree" : "DIFFER");
    std::printf("\nreduce: multigpu %.1f, Thrust %.1f\n", sum, thrust_sum);
    MULTIGPU_CUDA_TRY(cudaStreamDestroy(stream));
    if (!(transform_ok && reduce_ok && scan_ok)) {
      std::fprintf(stderr, "demo: results differ between multigpu and Thrust\n");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "demo: %s\n", e.what());
    return 1;
  }
}
