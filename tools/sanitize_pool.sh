#!/usr/bin/env bash
# Runs compute-sanitizer over GPU test binaries in one parallel pool on the GPU machine
# (device runs only; tests/sanitize is the sequential, CTest-registered form).
# Usage: tools/sanitize_pool.sh TOOL:BINARY...   (BINARY under build-gpu/tests; TOOL one of
#        memcheck racecheck synccheck initcheck; "memcheck:all" means every gpu_*_tests)
# Environment: POOL (parallel runs, default 10), SANITIZE_TIMEOUT (seconds per run, default 150).
# Small sizes (MULTIGPU_TEST_SMALL=1; racecheck MULTIGPU_TEST_TINY=1), and the tests that fill
# the card are left out.
# Logs go to $LOGS/sanitize (default build-gpu/logs); one line per run on stdout and in
# $LOGS/sanitize_summary.txt, written as each run ends.
set -u
export PATH=/opt/torch/.venv/bin:$PATH
out=${LOGS:-build-gpu/logs}
mkdir -p "$out/sanitize"
pairs=()
for arg in "$@"; do
  tool=${arg%%:*}
  bin=${arg#*:}
  if [[ $bin == all ]]; then
    for path in build-gpu/tests/gpu_*_tests; do pairs+=("$tool:$(basename "$path")"); done
  else
    pairs+=("$arg")
  fi
done
export out
export MULTIGPU_TEST_SMALL=1 MULTIGPU_STRESS_CASES=6 MULTIGPU_STRESS_MAX_SIZE=65536 MULTIGPU_NOSYNC_CASES=10
printf '%s\n' "${pairs[@]}" | xargs -P "${POOL:-10}" -I{} bash -c '
  tool=${1%%:*}; bin=${1#*:}; log="$out/sanitize/${tool}_${bin}.log"
  flags=(--tool "$tool" --error-exitcode 9 --report-api-errors no)
  brief=(--gtest_brief=1)
  [[ $tool == memcheck ]] && flags+=(--leak-check full)
  # racecheck costs a hundred times the others on the CUB kernels: the tiny cases, and the
  # start of every test in the log, so a run cut off or crashed says where it was.
  # The threads of the concurrency tests take turns under it (MULTIGPU_TEST_SERIAL_THREADS): its
  # launch tracking failed with several threads launching at once, and it checks each kernel
  # the same either way.
  [[ $tool == racecheck ]] && flags+=(--racecheck-report all) && brief=() && export MULTIGPU_TEST_TINY=1 \
    MULTIGPU_TEST_SERIAL_THREADS=${MULTIGPU_TEST_SERIAL_THREADS:-1}
  start=$(date +%s)
  # Line-buffered, so that what the tests printed survives a crash of the process.
  timeout "${SANITIZE_TIMEOUT:-150}" stdbuf -oL -eL compute-sanitizer "${flags[@]}" "build-gpu/tests/$bin" "${brief[@]}" \
    --gtest_filter="-*OutOfMemory*:*LargerThanTheDevice*" > "$log" 2>&1
  rc=$?
  summary=$(grep -E "(ERROR|RACECHECK|LEAK) SUMMARY" "$log" | tail -1)
  tests=$(grep -E "^\[  (PASSED|SKIPPED)  \]|^\[  FAILED  \]" "$log" | head -3 | paste -sd " " -)
  printf "%-9s %-30s rc %-3s %4ss  %s  %s\n" "$tool" "$bin" "$rc" "$(( $(date +%s) - start ))" "$summary" "$tests"
' _ {} | tee "$out/sanitize_summary.txt"
