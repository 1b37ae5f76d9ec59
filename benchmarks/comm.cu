// Scale-out costs under mpirun (docs/scale-out.md): the MPI communicator's all_reduce on host
// buffers (default and polled mode, each timed against the raw MPI_Allreduce in the same
// iterations) and on (staged) device buffers, and team reduce / inclusive_scan / sort against
// the local distributed_vector call and Thrust on the same number of elements on one GPU (the
// sort also against the raw MPI_Alltoallv of its data), and a 2-D stencil on a team_mdarray
// against the same stencil on one rank's box in one process, in one binary.
//   mpirun -np 4 build/benchmarks/bench_comm
// Every rank runs every benchmark a fixed number of iterations (collectives must pair up),
// after one untimed call (first-call costs: pools, the watchdog thread, MPI's connections)
// and a barrier, so that the ranks start together; rank 0 reports. Elements per rank:
// range(0); bytes per second count every rank's data.

#include "stencil_operators.hpp"

#include <multigpu/comm.hpp>
#include <multigpu/algorithm/copy.hpp>
#include <multigpu/comm/mpi_communicator.hpp>
#include <multigpu/team/team_algorithms.hpp>
#include <multigpu/team/team_mdarray.hpp>

#include <benchmark/benchmark.h>
#include <mpi.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <exception>
#include <vector>

namespace mg = multigpu;

namespace {

constexpr int iterations = 50;

mg::team& world() {
  static mg::team t(std::make_shared<mg::mpi_communicator>());
  return t;
}
int device() {
  static const int d = mg::launch_device(mg::mpi_bootstrap());
  return d;
}

// One untimed call, then every rank leaves a barrier together.
template <class F>
void warm_up(F&& call) {
  call();
  MPI_Barrier(MPI_COMM_WORLD);
}

// The communicator's all_reduce (in the given mode) on a host buffer, declared (host_memory)
// and not (the engine asks the driver about the pointer), and the raw MPI_Allreduce on the same
// buffer, back to back in every iteration, their order alternating: the counters multigpu_us,
// undeclared_us and raw_us are their mean times per call, from the same iterations, so a drift
// of the machine between benchmarks does not show as a ratio.
void all_reduce_against_raw(benchmark::State& state, mg::mpi_wait mode) {
  mg::mpi_communicator comm;  // every rank runs the same benchmarks in the same order
  comm.set_waiting(mode);
  std::vector<float> data(static_cast<std::size_t>(state.range(0)), 1.0f);
  auto ours = [&] { comm.all_reduce(mg::host_memory, data.data(), data.data(), data.size(), mg::reduce_op::sum); };
  auto undeclared = [&] { comm.all_reduce(data.data(), data.data(), data.size(), mg::reduce_op::sum); };
  auto raw = [&] {
    if (MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
      state.SkipWithError("MPI_Allreduce failed");
  };
  warm_up([&] {
    ours();
    undeclared();
    raw();
  });
  using clock = std::chrono::steady_clock;
  auto timed = [](auto& call) {
    const auto start = clock::now();
    call();
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  double ours_s = 0, undeclared_s = 0, raw_s = 0;
  long i = 0;
  for (auto _ : state) {
    if (i++ % 2 == 0) {
      ours_s += timed(ours);
      raw_s += timed(raw);
      undeclared_s += timed(undeclared);
    } else {
      undeclared_s += timed(undeclared);
      raw_s += timed(raw);
      ours_s += timed(ours);
    }
  }
  state.counters["multigpu_us"] = 1e6 * ours_s / static_cast<double>(i);
  state.counters["undeclared_us"] = 1e6 * undeclared_s / static_cast<double>(i);
  state.counters["raw_us"] = 1e6 * raw_s / static_cast<double>(i);
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float) * world().size());
}
void all_reduce_default_vs_raw(benchmark::State& state) { all_reduce_against_raw(state, mg::mpi_wait::watchdog); }
void all_reduce_polled_vs_raw(benchmark::State& state) { all_reduce_against_raw(state, mg::mpi_wait::polled); }

// The transport floor of a team sort: MPI_Alltoallv of every rank's range(0) floats, an equal
// share to every rank, from and to host buffers.
void raw_mpi_all_to_all_v(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const int ranks = world().size();
  std::vector<float> send(n, 1.0f), recv(n);
  std::vector<int> counts(static_cast<std::size_t>(ranks)), displs(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const std::size_t first = n * static_cast<std::size_t>(r) / static_cast<std::size_t>(ranks);
    const std::size_t last = n * static_cast<std::size_t>(r + 1) / static_cast<std::size_t>(ranks);
    counts[static_cast<std::size_t>(r)] = static_cast<int>(last - first);
    displs[static_cast<std::size_t>(r)] = static_cast<int>(first);
  }
  auto call = [&] {
    if (MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_FLOAT, recv.data(), counts.data(),
                      displs.data(), MPI_FLOAT, MPI_COMM_WORLD) != MPI_SUCCESS)
      state.SkipWithError("MPI_Alltoallv failed");
  };
  warm_up(call);
  for (auto _ : state) call();
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float) * ranks);
}

void all_reduce_device(benchmark::State& state) {
  mg::device_guard guard(device());
  thrust::device_vector<float> data(static_cast<std::size_t>(state.range(0)), 1.0f);
  float* p = thrust::raw_pointer_cast(data.data());
  warm_up([&] { world().comm().all_reduce(p, p, data.size(), mg::reduce_op::sum); });
  for (auto _ : state) world().comm().all_reduce(p, p, data.size(), mg::reduce_op::sum);
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float) * world().size());
}

void team_reduce(benchmark::State& state) {
  mg::team_vector<float> v(world(), static_cast<std::size_t>(state.range(0)), mg::device_group({device()}));
  mg::fill(v, 1.0f);
  warm_up([&] { benchmark::DoNotOptimize(mg::reduce(v)); });
  for (auto _ : state) benchmark::DoNotOptimize(mg::reduce(v));
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float) * world().size());
}

void team_inclusive_scan(benchmark::State& state) {
  mg::team_vector<float> v(world(), static_cast<std::size_t>(state.range(0)), mg::device_group({device()}));
  mg::fill(v, 1.0f);
  // A team of one returns as the local scan does, before the device is done: wait as the
  // baselines do, so that every rank count times the whole scan.
  auto call = [&] {
    mg::inclusive_scan(v, v, cuda::maximum<>{});
    v.local().group().synchronize();
  };
  warm_up(call);
  for (auto _ : state) call();
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float) * world().size());
}

// Baselines: the local distributed_vector call, and Thrust, on this rank's elements alone (no
// communication).
void local_reduce(benchmark::State& state) {
  mg::distributed_vector<float> v(static_cast<std::size_t>(state.range(0)), mg::device_group({device()}));
  mg::fill(v, 1.0f);
  warm_up([&] { benchmark::DoNotOptimize(mg::reduce(v)); });
  for (auto _ : state) benchmark::DoNotOptimize(mg::reduce(v));
  world().comm().barrier();
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float));
}

void local_inclusive_scan(benchmark::State& state) {
  mg::distributed_vector<float> v(static_cast<std::size_t>(state.range(0)), mg::device_group({device()}));
  mg::fill(v, 1.0f);
  warm_up([&] {
    mg::inclusive_scan(v, v, cuda::maximum<>{});
    v.group().synchronize();
  });
  for (auto _ : state) {
    mg::inclusive_scan(v, v, cuda::maximum<>{});
    v.group().synchronize();
  }
  world().comm().barrier();
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float));
}

void thrust_reduce(benchmark::State& state) {
  mg::device_guard guard(device());
  thrust::device_vector<float> data(static_cast<std::size_t>(state.range(0)), 1.0f);
  warm_up([&] { benchmark::DoNotOptimize(thrust::reduce(thrust::device, data.begin(), data.end())); });
  for (auto _ : state) benchmark::DoNotOptimize(thrust::reduce(thrust::device, data.begin(), data.end()));
  world().comm().barrier();
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float));
}

void thrust_inclusive_scan(benchmark::State& state) {
  mg::device_guard guard(device());
  thrust::device_vector<float> data(static_cast<std::size_t>(state.range(0)), 1.0f);
  warm_up([&] {
    thrust::inclusive_scan(thrust::device, data.begin(), data.end(), data.begin(), cuda::maximum<>{});
    cudaDeviceSynchronize();
  });
  for (auto _ : state) {
    thrust::inclusive_scan(thrust::device, data.begin(), data.end(), data.begin(), cuda::maximum<>{});
    cudaDeviceSynchronize();
  }
  world().comm().barrier();
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float));
}

// What a team call pays to agree on a rank-local step between two exchanges (team.hpp):
// detail::agree, one all_reduce of a status word. Compare with the one-float MPI_Allreduce of
// all_reduce_default_vs_raw.
void team_agreement(benchmark::State& state) {
  const std::exception_ptr none;
  auto call = [&] { mg::detail::agree(world(), mg::team_operation::sort, "benchmark", none); };
  warm_up(call);
  for (auto _ : state) call();
}

// Sorts of the same keys every iteration (a copy of unsorted keys, then the sort): team sort
// (local sort, exact splitting, one all_to_all_v, local sort), on its default path
// (exchange_path::automatic: by the part's size), forced onto the device path
// (team_sort_device: device memory straight to the communicator, which stages it through
// pinned memory when MPI is not CUDA-aware) and forced through host memory (team_sort_host),
// against the local distributed_vector sort and thrust::sort of one rank's keys. The device
// and host rows are what default_device_exchange_threshold is chosen from.
std::vector<float> unsorted_keys(std::size_t n, std::size_t offset) {
  std::vector<float> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<float>(((offset + i) * 2654435761u) % 1000003u);
  return keys;
}

void team_sort_on(benchmark::State& state, mg::exchange_path path) {
  world().set_exchange(path);
  const auto n = static_cast<std::size_t>(state.range(0));
  mg::team_vector<float> v(world(), n, mg::device_group({device()}));
  mg::team_vector<float> keys(world(), n, mg::device_group({device()}));
  const std::vector<float> host = unsorted_keys(n, v.offset());
  mg::detail::vector_access::upload(keys.local(), 0, host.data(), n);
  auto call = [&] {
    mg::copy(keys.local(), v.local());
    mg::sort(v);
    v.local().group().synchronize();  // a team of one returns as the local sort does, before the device is done
  };
  warm_up(call);
  for (auto _ : state) call();
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float) * world().size());
  world().set_exchange(mg::exchange_path::automatic);
}
void team_sort(benchmark::State& state) { team_sort_on(state, mg::exchange_path::automatic); }
void team_sort_device(benchmark::State& state) { team_sort_on(state, mg::exchange_path::device); }
void team_sort_host(benchmark::State& state) { team_sort_on(state, mg::exchange_path::host); }

void local_sort(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  mg::distributed_vector<float> v(n, mg::device_group({device()}));
  mg::distributed_vector<float> keys(n, mg::device_group({device()}));
  const std::vector<float> host = unsorted_keys(n, 0);
  mg::detail::vector_access::upload(keys, 0, host.data(), n);
  auto call = [&] {
    mg::copy(keys, v);
    mg::sort(v);
    v.group().synchronize();
  };
  warm_up(call);
  for (auto _ : state) call();
  world().comm().barrier();
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float));
}

void thrust_sort(benchmark::State& state) {
  mg::device_guard guard(device());
  const std::vector<float> host = unsorted_keys(static_cast<std::size_t>(state.range(0)), 0);
  thrust::device_vector<float> keys(host.begin(), host.end()), data(host.size());
  auto call = [&] {
    thrust::copy(thrust::device, keys.begin(), keys.end(), data.begin());
    thrust::sort(thrust::device, data.begin(), data.end());
    cudaDeviceSynchronize();
  };
  warm_up(call);
  for (auto _ : state) call();
  world().comm().barrier();
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float));
}

// A 2-D 5-point stencil (periodic, halo 1) on a team_mdarray in slabs, one per rank, each
// rank's box of range(0) floats in rows of 8192 on one slot of its GPU: every call exchanges
// two faces per rank through host memory, overlapped with the inner region. Against the same
// stencil on a distributed_mdarray of one rank's box in one process (its periodic halos
// exchanged on the device): the cost of the ranks' exchange. With several ranks on one GPU,
// they share it.
constexpr std::size_t stencil_columns = 8192;

template <class Array>
void time_stencil(benchmark::State& state, Array& a, Array& b, const mg::device_group& g) {
  auto call = [&] {
    mg::stencil_transform(a, b, bench::five_point{});
    g.synchronize();
  };
  warm_up(call);
  for (auto _ : state) call();
  world().comm().barrier();
  state.SetBytesProcessed(state.iterations() * state.range(0) * 2 * static_cast<std::int64_t>(sizeof(float)));
}

void team_stencil_2d(benchmark::State& state) {
  const std::size_t rows = static_cast<std::size_t>(state.range(0)) / stencil_columns;
  const std::size_t ranks = static_cast<std::size_t>(world().size());
  mg::team_mdarray_options<float, 2> o;
  o.halo = {1, 1};
  o.boundaries = {{{mg::boundary_kind::periodic}, {mg::boundary_kind::periodic}}};
  o.rank_grid = {ranks, 1};
  const mg::device_group g({device()});
  mg::team_mdarray<float, 2> a(world(), {rows * ranks, stencil_columns}, 1.0f, g, o);
  mg::team_mdarray<float, 2> b(world(), {rows * ranks, stencil_columns}, 0.0f, g, a.options());
  time_stencil(state, a, b, g);
}

void local_stencil_2d(benchmark::State& state) {
  const std::size_t rows = static_cast<std::size_t>(state.range(0)) / stencil_columns;
  mg::mdarray_options<float, 2> o;
  o.halo = {1, 1};
  o.boundaries = {{{mg::boundary_kind::periodic}, {mg::boundary_kind::periodic}}};
  const mg::device_group g({device()});
  mg::distributed_mdarray<float, 2> a({rows, stencil_columns}, 1.0f, g, o);
  mg::distributed_mdarray<float, 2> b({rows, stencil_columns}, 0.0f, g, a.options());
  time_stencil(state, a, b, g);
}

// Collectives move whole buffers through host memory: up to 2^24 elements per rank.
void sizes(benchmark::internal::Benchmark* b) {
  b->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Arg(1)->Arg(1 << 10)->Arg(1 << 20)->Arg(1 << 24);
}
// The same sizes for the comparisons with the raw call, the small ones with many more
// iterations: a mean over 50 calls of a microsecond is one scheduler hiccup away from noise.
void small_sizes(benchmark::internal::Benchmark* b) {
  b->Iterations(2000)->Unit(benchmark::kMicrosecond)->Arg(1)->Arg(1 << 10);
}
void large_sizes(benchmark::internal::Benchmark* b) {
  b->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Arg(1 << 20)->Arg(1 << 24);
}
// Team algorithms move one partial per rank: up to 2^28 elements per rank.
void team_sizes(benchmark::internal::Benchmark* b) {
  b->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 24)->Arg(1 << 28);
}
// Stencils: 2^20 to 2^26 floats per rank (128 to 8192 rows of 8192).
void stencil_sizes(benchmark::internal::Benchmark* b) {
  b->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Arg(1 << 20)->Arg(1 << 24)->Arg(1 << 26);
}
// Team sorts move every element between ranks: up to 2^28 elements (1 GiB) per rank on the
// default path and against its floor, the raw MPI_Alltoallv of the same bytes.
void sort_sizes(benchmark::internal::Benchmark* b) {
  b->Iterations(10)->Unit(benchmark::kMicrosecond)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 24)->Arg(1 << 28);
}
// The host path copies every key to and from host memory: up to 2^24 per rank.
void host_sort_sizes(benchmark::internal::Benchmark* b) {
  b->Iterations(10)->Unit(benchmark::kMicrosecond)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 24);
}

}  // namespace

BENCHMARK(all_reduce_default_vs_raw)->Apply(small_sizes);
BENCHMARK(all_reduce_default_vs_raw)->Apply(large_sizes);
BENCHMARK(all_reduce_polled_vs_raw)->Apply(small_sizes);
BENCHMARK(all_reduce_polled_vs_raw)->Apply(large_sizes);
BENCHMARK(all_reduce_device)->Apply(sizes);
BENCHMARK(team_reduce)->Apply(team_sizes);
BENCHMARK(local_reduce)->Apply(team_sizes);
BENCHMARK(thrust_reduce)->Apply(team_sizes);
BENCHMARK(team_inclusive_scan)->Apply(team_sizes);
BENCHMARK(local_inclusive_scan)->Apply(team_sizes);
BENCHMARK(thrust_inclusive_scan)->Apply(team_sizes);
BENCHMARK(team_sort)->Apply(sort_sizes);
BENCHMARK(team_sort_device)->Apply(sort_sizes);
BENCHMARK(team_sort_host)->Apply(host_sort_sizes);
BENCHMARK(team_agreement)->Arg(1)->Iterations(2000)->Unit(benchmark::kMicrosecond);  // one word
BENCHMARK(local_sort)->Apply(sort_sizes);
BENCHMARK(thrust_sort)->Apply(sort_sizes);
BENCHMARK(raw_mpi_all_to_all_v)->Apply(sort_sizes);
BENCHMARK(team_stencil_2d)->Apply(stencil_sizes);
BENCHMARK(local_stencil_2d)->Apply(stencil_sizes);

namespace {
class silent_reporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  if (mg::visible_device_count() == 0) {
    if (rank == 0) std::printf("no GPU visible: skipped\n");
    status = 77;
  } else {
    benchmark::Initialize(&argc, argv);
    // Both collective, so on every rank before any benchmark: the team's MPI_Comm_dup must
    // pair with the same dup on every rank, not with a benchmark's own communicator.
    device();
    world();
    if (rank == 0) {
      std::printf("%d MPI rank(s), MPI CUDA-aware: %s\n", world().size(), mg::mpi_cuda_aware() ? "yes" : "no");
      benchmark::RunSpecifiedBenchmarks();
    } else {
      silent_reporter quiet;
      benchmark::RunSpecifiedBenchmarks(&quiet);
    }
    benchmark::Shutdown();
  }
  {
    // The team's communicator must go before MPI_Finalize.
    if (status == 0) world() = mg::team::in_process();
  }
  MPI_Finalize();
  return status;
}
