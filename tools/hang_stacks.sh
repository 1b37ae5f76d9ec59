#!/usr/bin/env bash
# Tells a hang from slowness on the GPU machine (device runs only): runs COMMAND, and after
# SECONDS records whether its log still grows, the GPU's utilisation, and every thread's
# stack of the test process (gdb, or eu-stack where gdb is missing); then stops it.
# Usage: tools/hang_stacks.sh SECONDS NAME COMMAND...
#   e.g. MULTIGPU_TEST_TINY=1 tools/hang_stacks.sh 120 racecheck_one_vector \
#          compute-sanitizer --tool racecheck build-gpu/tests/gpu_concurrency_tests \
#          --gtest_filter='*OneVectorRead*'
# Writes $LOGS/hang/NAME.{log,stacks.txt,state.txt} (default build-gpu/logs).
set -u
export PATH=/opt/torch/.venv/bin:$PATH
seconds=${1:?SECONDS}
name=${2:?NAME}
shift 2
out=${LOGS:-build-gpu/logs}/hang
mkdir -p "$out"
"$@" > "$out/$name.log" 2>&1 &
runner=$!
sleep "$seconds"
state="$out/$name.state.txt"
if ! kill -0 "$runner" 2> /dev/null; then
  wait "$runner"
  echo "$name: finished within ${seconds}s, rc $?" | tee "$state"
  exit 0
fi
before=$(wc -c < "$out/$name.log")
sleep 15
after=$(wc -c < "$out/$name.log")
# The deepest descendant is the test process (compute-sanitizer starts it as its child).
target=$runner
while child=$(pgrep -P "$target" | head -1) && [[ -n $child ]]; do target=$child; done
{
  echo "$name: still running after ${seconds}s; log $before -> $after bytes in 15 s"
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
  echo "process $target: $(tr '\0' ' ' < "/proc/$target/cmdline" 2> /dev/null)"
  echo "threads: $(ls "/proc/$target/task" 2> /dev/null | wc -l)"
} > "$state" 2>&1
if command -v gdb > /dev/null; then
  gdb -p "$target" -batch -ex 'thread apply all bt 25' > "$out/$name.stacks.txt" 2>&1
elif command -v eu-stack > /dev/null; then
  eu-stack -p "$target" > "$out/$name.stacks.txt" 2>&1
else
  for t in /proc/"$target"/task/*; do echo "== $t: $(cat "$t/comm") $(cat "$t/wchan" 2> /dev/null)"; done > "$out/$name.stacks.txt"
fi
kill -- "$runner" 2> /dev/null
pkill -P "$runner" 2> /dev/null
kill "$target" 2> /dev/null
wait "$runner" 2> /dev/null
cat "$state"
