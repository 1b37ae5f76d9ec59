#!/usr/bin/env bash
# Builds on the GPU machine and runs what is asked, leaving logs in $OUT (device runs only).
# Usage: tools/gpu_suite.sh [targets...] -- [steps...]
#   targets: CMake targets to build (default: all)
#   steps:   ctest | ctest:<regex> | label:<ctest label> | rest:<ctest label> (those of the label the last
#            label step did not see pass) | mpi | memcheck:<binary>[:<gtest filter>] | bench:<binary>[:<filter>] | demo
#            | sanitize:<tool>[:<binaries, comma separated>]  (every gpu_*_tests, 6 at a time, small sizes)
#            | nosync:<cases>  (the no-sync differential test's long mode)
#            | mpibench:<ranks>  (bench_comm under mpirun, every rank on the visible GPUs)
#   environment: CMAKE_ARGS (extra configure arguments), MEMCHECK_TIMEOUT, BENCH_TIMEOUT,
#                SANITIZE_TIMEOUT (seconds per binary), STOP_AFTER (label steps: seconds after
#                the start when tests stop)
# Logs go to $LOGS (default build-gpu/logs); at exit they are packed into one archive,
# $OUT/gpu_suite_logs.tar.gz, because at most 8 files come back from $OUT.
set -u
export PATH=/opt/torch/.venv/bin:$PATH
out=${LOGS:-build-gpu/logs}
mkdir -p "$out"
[[ -n ${OUT:-} ]] && trap 'tar czf "$OUT/gpu_suite_logs.tar.gz" -C "$out" . 2> /dev/null' EXIT
targets=()
while [[ $# -gt 0 && $1 != -- ]]; do targets+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_CUDA_ARCHITECTURES=native ${CMAKE_ARGS:-} > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
if [[ ${#targets[@]} -eq 0 ]]; then
  cmake --build build-gpu -- -k 0 > "$out/build.log" 2>&1
else
  cmake --build build-gpu --target "${targets[@]}" -- -k 0 > "$out/build.log" 2>&1
fi
rc=$?
echo "build: rc $rc in $(( $(date +%s) - start ))s"
[[ $rc -ne 0 ]] && grep -E "error|FAILED" -A3 "$out/build.log" | head -60
# The lines of a CTest log that say what passed and what failed, and the failures' assertions.
ctest_summary() {
  grep -E "tests passed|Total Test time|\*\*\*|Failed|FAILED|Failure|Expected|Which is|Value of" "$1" | tail -60
}
status=0
for step in "$@"; do
  t0=$(date +%s)
  case $step in
    ctest) ctest --test-dir build-gpu --output-on-failure > "$out/ctest.log" 2>&1; r=$?
           grep -E "tests passed|Total Test time|\*\*\*|Failed|Skipped|Not Run" "$out/ctest.log" | tail -30 ;;
    ctest:*) ctest --test-dir build-gpu --output-on-failure -R "${step#ctest:}" > "$out/ctest_r.log" 2>&1; r=$?
           ctest_summary "$out/ctest_r.log" ;;
    label:*) stop=()
           # STOP_AFTER: seconds after this script started when no test may run any more
           # (ctest --stop-time), so that a call under a time limit still reports what passed.
           [[ -n ${STOP_AFTER:-} ]] && stop=(--stop-time "$(date -d @$((start + STOP_AFTER)) +%H:%M:%S)")
           ctest --test-dir build-gpu --output-on-failure -L "${step#label:}" "${stop[@]}" > "$out/ctest_r.log" 2>&1; r=$?
           ctest_summary "$out/ctest_r.log" ;;
    rest:*) # The label's tests that the last label step did not see pass (cut off by its time
           # limit, failed, or never started), on the tree it built: a warm machine's next call.
           passed=$(sed -nE 's/.*Test +#[0-9]+: ([^ ]+) \.+ +Passed.*/\1/p' "$out/ctest_r.log" 2> /dev/null | paste -sd'|')
           echo "already passed: ${passed:-none}"
           skip=(); [[ -n $passed ]] && skip=(-E "^(${passed})\$")
           ctest --test-dir build-gpu --output-on-failure -L "${step#rest:}" "${skip[@]}" > "$out/ctest_rest.log" 2>&1; r=$?
           ctest_summary "$out/ctest_rest.log" ;;
    mpi) ctest --test-dir build-gpu --output-on-failure -L mpi > "$out/mpi.log" 2>&1; r=$?
           ctest_summary "$out/mpi.log" ;;
    memcheck:*) IFS=: read -r _ bin filter <<< "$step"
           MULTIGPU_TEST_SMALL=1 MULTIGPU_NOSYNC_CASES=${MEMCHECK_NOSYNC_CASES:-10} timeout ${MEMCHECK_TIMEOUT:-500} compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
             "build-gpu/tests/$bin" --gtest_brief=1 --gtest_filter="${filter:-*}" > "$out/memcheck_$bin.log" 2>&1; r=$?
           echo "memcheck $bin: rc $r; $(grep -E 'ERROR SUMMARY' "$out/memcheck_$bin.log" | tail -1)" ;;
    bench:*) IFS=: read -r _ bin filter <<< "$step"
           timeout ${BENCH_TIMEOUT:-500} "build-gpu/benchmarks/$bin" --benchmark_filter="${filter:-.}" --benchmark_out="$out/$bin.json" \
             --benchmark_out_format=json > "$out/$bin.txt" 2>&1; r=$?
           echo "$bin: rc $r" ;;
    sanitize:*) IFS=: read -r _ tool list <<< "$step"
           if [[ -n ${list:-} ]]; then bins=${list//,/ }; else bins=$(cd build-gpu/tests && ls gpu_*_tests); fi
           mkdir -p "$out/sanitize"
           export tool out
           printf '%s\n' $bins | MULTIGPU_TEST_SMALL=1 MULTIGPU_STRESS_CASES=6 MULTIGPU_STRESS_MAX_SIZE=65536 MULTIGPU_NOSYNC_CASES=10 \
             xargs -P 6 -I{} sh -c 'flags="--report-api-errors no"; [ "$tool" = racecheck ] && flags="$flags --racecheck-report all";
               timeout ${SANITIZE_TIMEOUT:-400} compute-sanitizer --tool $tool $flags --error-exitcode 9 build-gpu/tests/{} --gtest_brief=1 --gtest_filter="-*OutOfMemory*:*FillsTheCard*" > "$out/sanitize/${tool}_{}.log" 2>&1;
               echo "$tool {}: rc $? $(grep -E "(ERROR|RACECHECK) SUMMARY" "$out/sanitize/${tool}_{}.log" | tail -1)"'
           r=$? ;;
    nosync:*) MULTIGPU_NOSYNC_CASES=${step#nosync:} timeout ${BENCH_TIMEOUT:-500} build-gpu/tests/gpu_nosync_tests --gtest_brief=1 > "$out/nosync.log" 2>&1; r=$?
           grep -E "cases|PASSED|FAILED|mismatch" "$out/nosync.log" | tail -8 ;;
    mpibench:*) timeout ${BENCH_TIMEOUT:-500} mpirun --allow-run-as-root --oversubscribe -np "${step#mpibench:}" build-gpu/benchmarks/bench_comm \
             --benchmark_out="$out/bench_comm_np${step#mpibench:}.json" --benchmark_out_format=json > "$out/bench_comm_np${step#mpibench:}.txt" 2>&1; r=$?
           echo "bench_comm np${step#mpibench:}: rc $r" ;;
    demo) timeout 120 build-gpu/examples/demo > "$out/demo.log" 2>&1; r=$?; tail -12 "$out/demo.log" ;;
    *) echo "unknown step $step"; r=2 ;;
  esac
  echo "step $step: rc $r in $(( $(date +%s) - t0 ))s"
  [[ $r -ne 0 ]] && status=1
done
exit $status
