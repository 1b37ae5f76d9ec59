#!/usr/bin/env bash
# Reruns single sanitizer findings on the GPU machine, each as its own process, to tell a
# defect in the library from the sanitizer's behaviour under load (device runs only).
# Usage: tools/sanitizer_repro.sh [SECONDS] TOOL:BINARY:FILTER[:ENV=VALUE,...]...
#   every run at once, each cut off after SECONDS (default 150); racecheck runs take the
#   tiny cases; ENV assignments (comma separated) are set for that run only.
# Logs go to $LOGS/repro (default build-gpu/logs); one summary line per run on stdout.
set -u
export PATH=/opt/torch/.venv/bin:$PATH
out=${LOGS:-build-gpu/logs}/repro
mkdir -p "$out"
seconds=150
[[ ${1:-} =~ ^[0-9]+$ ]] && { seconds=$1; shift; }
n=0
for spec in "$@"; do
  IFS=: read -r tool bin filter envs <<< "$spec"
  n=$((n + 1))
  (
    export MULTIGPU_TEST_SMALL=1
    [[ $tool == racecheck ]] && export MULTIGPU_TEST_TINY=1
    IFS=, read -ra assignments <<< "${envs:-}"
    for a in "${assignments[@]}"; do export "${a?}"; done
    flags=(--tool "$tool" --error-exitcode 9 --report-api-errors no)
    [[ $tool == racecheck ]] && flags+=(--racecheck-report all)
    log="$out/${n}_${tool}_${bin}.log"
    start=$(date +%s)
    # The peak memory of the sanitizer and the test (GNU time, where installed): a run that
    # ends without a word may have been killed for memory.
    timer=()
    rm -f "$log.time"
    [[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f "sanitizer_repro: peak RSS %M KiB, exit %x" -a -o "$log.time")
    timeout "$seconds" "${timer[@]}" stdbuf -oL -eL compute-sanitizer "${flags[@]}" "build-gpu/tests/$bin" --gtest_filter="$filter" > "$log" 2>&1
    rc=$?
    [[ -f $log.time ]] && cat "$log.time" >> "$log"
    summary=$(grep -E "(ERROR|RACECHECK|LEAK) SUMMARY" "$log" | tail -1)
    printf "%-9s %-26s %-60s %-24s rc %-3s %4ss %s %s %s\n" "$tool" "$bin" "$filter" "${envs:-}" "$rc" \
      "$(( $(date +%s) - start ))" "$summary" "$(grep -cE '^\[       OK \]' "$log") ok, $(grep -cE '^\[  FAILED  \]' "$log") failed" \
      "$(grep -h '^sanitizer_repro:' "$log.time" 2> /dev/null)"
  ) &
done
wait
