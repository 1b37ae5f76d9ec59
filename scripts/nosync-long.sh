#!/usr/bin/env bash
# The no-sync differential test's long mode: many random call sequences with no host sync
# between calls, spread over parallel lanes until SECONDS are up (docs/testing.md).
# Usage: scripts/nosync-long.sh [BUILD_DIR] [SECONDS] [LANES_PER_TYPE] [CASES_PER_CHUNK]
#   defaults: build-gpu, 300 s, 3 lanes per element type, 2000 cases per chunk
# Each lane runs chunks of cases with distinct seeds; a failing chunk prints its seed, so
#   MULTIGPU_NOSYNC_SEED=<seed> MULTIGPU_NOSYNC_CASES=<chunk> BUILD_DIR/tests/gpu_nosync_tests
# reproduces it. Logs go to BUILD_DIR/nosync-logs; the last line is the summary, and the exit
# status is 1 when any case failed.
set -u
build=${1:-build-gpu}
seconds=${2:-300}
lanes=${3:-3}
chunk=${4:-2000}
binary=$build/tests/gpu_nosync_tests
[[ -x $binary ]] || { echo "nosync-long: $binary is missing: build the gpu preset first" >&2; exit 2; }
logs=$build/nosync-logs
rm -rf "$logs"
mkdir -p "$logs"
end=$(($(date +%s) + seconds))
lane() {  # TEST LANE
  local n=0
  while true; do
    local left=$((end - $(date +%s)))
    ((left > 5)) || break
    local seed=$((20261203 + ($2 * 100000 + n) * chunk))
    echo "chunk $n: seed $seed" >> "$logs/$1_$2.log"
    MULTIGPU_NOSYNC_CASES=$chunk MULTIGPU_NOSYNC_SEED=$seed timeout "$left" "$binary" \
      --gtest_filter="NoSync.$1" --gtest_brief=1 >> "$logs/$1_$2.log" 2>&1 ||
      echo "lane $1 $2 chunk $n (seed $seed): rc $?" >> "$logs/$1_$2.log"
    n=$((n + 1))
  done
}
for test in BatchesOfUnsignedInt BatchesOfUnsignedLongLong; do
  for ((i = 0; i < lanes; ++i)); do lane "$test" "$i" & done
done
wait
# A chunk cut off by the deadline exits 124 and counts nothing; anything else is a failure.
cat "$logs"/*.log | awk '
  /^no-sync batches/ { cases += $(NF-3); failed += $(NF-1) }
  /rc [0-9]+$/ && !/rc 124$/ || /FAILED|Failure/ { print; bad = 1 }
  END { printf "no-sync long mode: %d cases finished, %d failed\n", cases, failed; exit (failed > 0 || bad) }'
