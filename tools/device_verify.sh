#!/usr/bin/env bash
# The verification after a change, on the GPU machine, in back-to-back device calls (each
# while the previous call's machine is still warm, so the build is reused):
#   tools/device_verify.sh suite    build with fault injection, every gpu_ test, the mpi
#                                   label, the demo                       (about 520 s)
#   tools/device_verify.sh checks [SECONDS]
#                                   the scale-out and algorithm benchmarks, then for SECONDS
#                                   (default 240) the no-sync long mode next to the sanitizer
#                                   pool: memcheck on every GPU test binary, racecheck,
#                                   synccheck and initcheck on the kernel-heavy ones
#   tools/device_verify.sh alone [SECONDS] [PAIRS...]
#                                   the sanitizer runs that need the GPU nearly to themselves,
#                                   two at a time for SECONDS (default 540): by default
#                                   memcheck of the sort tests (246 s in a pool of ten),
#                                   racecheck of the concurrency, scan and sort tests, and
#                                   initcheck of the concurrency, reduce and scan tests;
#                                   or the TOOL:BINARY pairs given
#   tools/device_verify.sh perf     the executor issue's figures (after `suite`, which builds the
#                                   benchmarks): segment_overhead at 1, 4 and 8 slots under every
#                                   dispatch policy, and transform, reduce and both scans of
#                                   floats at 2^16 to 2^28 on 1 and 4 slots against CUB, cached
#                                   Thrust and Thrust, summed up by tools/bench_ratios.py
#                                   (about 200 s)
#   tools/device_verify.sh findings
#                                   the open sanitizer findings, each in its own process (about 200 s)
#   tools/device_verify.sh triage [SECONDS]
#                                   the build that `suite` uses (fault injection on), then the
#                                   open initcheck questions, two runs at a time for SECONDS
#                                   (default 150) each: the reduce tests without and with the
#                                   1 KiB element test (alone, launches blocking, no graph
#                                   shapes, a 64 KiB stack limit), then
#                                   tools/initcheck_graph_write_probe.cu (60 s)
#   tools/device_verify.sh long [SECONDS] [LANES]
#                                   the no-sync long mode alone, LANES (default 6) per element
#                                   type, for SECONDS (default 400): 10^5 cases need the GPU
#                                   to itself (beside the sanitizers, 6 lanes ran 41,000 cases
#                                   in 270 s)
# Sanitizers run POOL (default 6) at a time: with 10 at once on the one H200,
# compute-sanitizer reported internal errors and initcheck runs stopped on illegal-address
# errors that the same binaries do not show when run alone.
# Logs stay in build-gpu/logs and come back packed as $OUT/<what>_logs.tar.gz (at most 8
# files come back from $OUT); the summaries are printed.
set -u
export PATH=/opt/torch/.venv/bin:$PATH
export LOGS=${LOGS:-build-gpu/logs}
what=${1:?suite or checks}
here=$(dirname "$0")
case $what in
  suite)
    CMAKE_ARGS="-DMULTIGPU_FAULT_INJECTION=ON ${CMAKE_ARGS:-}" "$here/gpu_suite.sh" -- ctest:'^gpu_' mpi demo ;;
  checks)
    seconds=${2:-240}
    BENCH_TIMEOUT=${BENCH_TIMEOUT:-150} "$here/gpu_suite.sh" bench_comm bench_algorithms bench_merge_routes bench_sort -- \
      mpibench:1 mpibench:2 mpibench:4 'bench:bench_algorithms:<float>/(65536|1048576|16777216|268435456)/(1|4)/' \
      bench:bench_merge_routes:segment_overhead
    "$here/nosync_long.sh" "$seconds" 3 1000 > "$LOGS/nosync_summary.txt" 2>&1 &
    lanes=$!
    kernels="gpu_concurrency_tests gpu_scan_tests gpu_reduce_tests gpu_graph_tests gpu_sort_tests gpu_gather_tests gpu_schedule_tests"
    pairs=(memcheck:all)
    for tool in racecheck synccheck initcheck; do
      for bin in $kernels; do pairs+=("$tool:$bin"); done
    done
    POOL=${POOL:-6} SANITIZE_TIMEOUT=$((seconds - 10)) timeout "$seconds" "$here/sanitize_pool.sh" "${pairs[@]}" > /dev/null 2>&1
    wait "$lanes"
    echo "== sanitizers (runs not listed were cut off at ${seconds}s):"
    cat "$LOGS/sanitize_summary.txt"
    echo "== no-sync long mode:"
    tail -5 "$LOGS/nosync_summary.txt" ;;
  alone)
    seconds=${2:-540}
    [[ $seconds =~ ^[0-9]+$ && $seconds -gt 10 ]] || { echo "alone: SECONDS (over 10) comes before any TOOL:BINARY" >&2; exit 2; }
    shift $(( $# < 2 ? $# : 2 ))
    pairs=("$@")
    (( ${#pairs[@]} )) || pairs=(memcheck:gpu_sort_tests racecheck:gpu_concurrency_tests racecheck:gpu_scan_tests
                                 initcheck:gpu_concurrency_tests initcheck:gpu_reduce_tests initcheck:gpu_scan_tests
                                 racecheck:gpu_sort_tests)
    POOL=${POOL:-2} SANITIZE_TIMEOUT=$((seconds - 10)) timeout "$seconds" "$here/sanitize_pool.sh" "${pairs[@]}" > /dev/null 2>&1
    echo "== sanitizers, two at a time (runs not listed were cut off at ${seconds}s):"
    cat "$LOGS/sanitize_summary.txt" ;;
  triage)
    seconds=${2:-150}
    CMAKE_ARGS="-DMULTIGPU_FAULT_INJECTION=ON ${CMAKE_ARGS:-}" "$here/gpu_suite.sh" || exit 1
    # The reduce tests stop on an illegal address under initcheck, alone too, from the 1 KiB
    # element test on: without it, it alone (launches blocking, and with no graph shapes).
    # Two at a time, so that the GPU is nearly theirs.
    specs=('initcheck:gpu_reduce_tests:-ReduceOrder.WideElementsKeepTheirOrder'
           'initcheck:gpu_reduce_tests:ReduceOrder.WideElementsKeepTheirOrder')
    "$here/sanitizer_repro.sh" "$seconds" "${specs[@]}"
    specs=('initcheck:gpu_reduce_tests:ReduceOrder.WideElementsKeepTheirOrder:CUDA_LAUNCH_BLOCKING=1'
           'initcheck:gpu_reduce_tests:ReduceOrder.WideElementsKeepTheirOrder:MULTIGPU_TEST_NO_GRAPH=1')
    LOGS=$LOGS/second "$here/sanitizer_repro.sh" "$seconds" "${specs[@]}"
    # The 1 KiB element kernel's frame is about 5 KiB a thread: with a 64 KiB stack limit
    # per thread, does initcheck's instrumentation still overflow it? (memcheck as the control.)
    specs=('initcheck:gpu_reduce_tests:ReduceOrder.WideElementsKeepTheirOrder:MULTIGPU_TEST_STACK_BYTES=65536'
           'memcheck:gpu_reduce_tests:ReduceOrder.WideElementsKeepTheirOrder:MULTIGPU_TEST_STACK_BYTES=65536')
    LOGS=$LOGS/third "$here/sanitizer_repro.sh" "$seconds" "${specs[@]}"
    # Does initcheck see the writes of an executable graph updated in place (the graph tests'
    # reports are reads of vectors that graph replay filled)? All at once, 60 s each.
    nvcc -arch=native -o build-gpu/initcheck_graph_write_probe "$here/initcheck_graph_write_probe.cu" || exit 1
    for kind in captured updated eager; do
      ( timeout 60 compute-sanitizer --tool initcheck --error-exitcode 9 build-gpu/initcheck_graph_write_probe "$kind" \
          > "$LOGS/initcheck_graph_write_probe_$kind.log" 2>&1
        echo "initcheck_graph_write_probe $kind, initcheck: rc $? $(grep -E 'probe|SUMMARY' "$LOGS/initcheck_graph_write_probe_$kind.log" | tr '\n' ' ')" ) &
    done
    wait
    [[ -n ${OUT:-} ]] && tar czf "$OUT/triage_logs.tar.gz" -C "$LOGS" . ;;
  perf)
    BENCH_TIMEOUT=${BENCH_TIMEOUT:-150} "$here/gpu_suite.sh" bench_merge_routes bench_algorithms -- \
      'bench:bench_merge_routes:segment_overhead/(1|4|8)/' \
      'bench:bench_algorithms:(transform|reduce|inclusive_scan|exclusive_scan)<float>/(65536|1048576|16777216|268435456)/(1|4)/'
    python3 "$here/bench_ratios.py" "$LOGS/bench_merge_routes.json" "$LOGS/bench_algorithms.json" | tee "$LOGS/bench_ratios.txt" ;;
  long)
    "$here/nosync_long.sh" "${2:-400}" "${3:-6}" 1000 > "$LOGS/nosync_summary.txt" 2>&1
    tail -5 "$LOGS/nosync_summary.txt" ;;
  findings)
    mkdir -p "$LOGS"
    # The sanitizer findings still open, each in its own process, all at once (about 200 s
    # after a build): the racecheck hang (stacks after 150 s, with modules loaded lazily and
    # eagerly), the racecheck crash and the initcheck reports under graph replay, the graph
    # probe's reallocation case, and memcheck's stream-ordered race tracking where this
    # compute-sanitizer has it.
    if [[ ! -x build-gpu/tests/gpu_scan_tests ]]; then
      cmake -S . -B build-gpu -G Ninja -DCMAKE_CUDA_ARCHITECTURES=native > /dev/null &&
        cmake --build build-gpu --target gpu_concurrency_tests gpu_scan_tests gpu_reduce_tests > "$LOGS/build.log" 2>&1 ||
        { tail -20 "$LOGS/build.log"; exit 1; }
    fi
    nvcc -arch=native -o build-gpu/graph_sanitizer_probe "$here/graph_sanitizer_probe.cu" || exit 1
    racecheck=(compute-sanitizer --tool racecheck --racecheck-report all build-gpu/tests/gpu_concurrency_tests
               --gtest_filter='*OneVectorRead*')
    MULTIGPU_TEST_TINY=1 "$here/hang_stacks.sh" 150 racecheck_one_vector "${racecheck[@]}" &
    MULTIGPU_TEST_TINY=1 CUDA_MODULE_LOADING=EAGER "$here/hang_stacks.sh" 150 racecheck_one_vector_eager "${racecheck[@]}" &
    specs=('racecheck:gpu_scan_tests:Scan/4.SubrangesAndOutputsOnOtherGroups'
           'initcheck:gpu_reduce_tests:*DotOfVectorsOnDifferentGroups*'
           'initcheck:gpu_scan_tests:*SubrangesAndOutputsOnOtherGroups*'
           'initcheck:gpu_scan_tests:Scan/2.SubrangesAndOutputsOnOtherGroups:MULTIGPU_TEST_NO_GRAPH=1')
    "$here/sanitizer_repro.sh" 170 "${specs[@]}" &
    for tool in initcheck memcheck; do
      timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 9 build-gpu/graph_sanitizer_probe realloc \
        > "$LOGS/probe_realloc_$tool.log" 2>&1
      echo "graph probe realloc, $tool: rc $? $(grep -E 'probe|SUMMARY' "$LOGS/probe_realloc_$tool.log" | tr '\n' ' ')"
    done
    if compute-sanitizer --help 2>&1 | grep -q -- --track-stream-ordered-races; then
      MULTIGPU_TEST_SMALL=1 timeout 170 compute-sanitizer --tool memcheck --track-stream-ordered-races all --error-exitcode 9 \
        build-gpu/tests/gpu_reduce_tests --gtest_brief=1 --gtest_filter='*DotOfVectorsOnDifferentGroups*' \
        > "$LOGS/memcheck_stream_ordered_dot.log" 2>&1
      echo "memcheck --track-stream-ordered-races, dot across groups: rc $? $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck_stream_ordered_dot.log")"
    else
      echo "this compute-sanitizer has no --track-stream-ordered-races"
    fi
    wait ;;
  *) echo "usage: $0 suite | checks [SECONDS] | alone [SECONDS] [TOOL:BINARY...] | triage [SECONDS] | perf | long [SECONDS] [LANES] | findings" >&2; exit 2 ;;
esac
status=$?
[[ -n ${OUT:-} ]] && tar czf "$OUT/${what}_logs.tar.gz" -C "$LOGS" . 2> /dev/null
exit $status
