#!/usr/bin/env bash
# The no-sync differential test's long mode on the GPU machine, spread over parallel lanes so
# that 10^5 cases fit in one device call: each lane runs chunks of cases with distinct seeds
# until its time is up, then the totals are summed from the chunks that finished.
# Usage: tools/nosync_long.sh SECONDS [LANES_PER_TYPE] [CASES_PER_CHUNK]
# Logs go to $LOGS/nosync (default build-gpu/logs/nosync); the summary is the last line of
# stdout. Wait for it with `wait $pid` when run in the background (pgrep -f would also match
# the shell whose command line names this script).
set -u
seconds=${1:?seconds}
lanes=${2:-3}
chunk=${3:-2000}
out=${LOGS:-build-gpu/logs}
mkdir -p "$out/nosync"
binary=build-gpu/tests/gpu_nosync_tests
end=$(( $(date +%s) + seconds ))
lane() {  # type index
  local n=0
  while true; do
    local left=$(( end - $(date +%s) ))
    (( left > 5 )) || break
    local seed=$(( 20261203 + ($2 * 100000 + n) * chunk ))
    MULTIGPU_NOSYNC_CASES=$chunk MULTIGPU_NOSYNC_SEED=$seed timeout "$left" "$binary" \
      --gtest_filter="NoSync.$1" --gtest_brief=1 >> "$out/nosync/$1_$2.log" 2>&1 || echo "lane $1 $2 chunk $n: rc $?" >> "$out/nosync/$1_$2.log"
    n=$(( n + 1 ))
  done
}
for type in BatchesOfUnsignedInt BatchesOfUnsignedLongLong; do
  for (( i = 0; i < lanes; ++i )); do lane "$type" "$i" & done
done
wait
cat "$out"/nosync/*.log | awk '/^no-sync batches/ { cases += $(NF-3); failed += $(NF-1) } /rc [0-9]+$|FAILED|Failure/ { print }
  END { printf "no-sync long mode: %d cases finished, %d failed\n", cases, failed }'
