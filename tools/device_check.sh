#!/usr/bin/env bash
# Runs prebuilt test and benchmark binaries on a GPU machine and leaves logs in $OUT.
# Usage: tools/device_check.sh BIN_DIR [tests|sanitize|bench|all] [benchmark filter]
# BIN_DIR holds the binaries (and libbenchmark if the machine lacks it).
set -u
bin=${1:?binary folder}
what=${2:-all}
filter=${3:-.}
out=${OUT:-/tmp/out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.sm --format=csv | tee "$out/gpu.txt"
status=0
if [[ $what == tests || $what == all ]]; then
  for t in "$bin"/gpu_*_tests; do
    name=$(basename "$t")
    start=$(date +%s)
    timeout 300 "$t" --gtest_brief=1 > "$out/$name.log" 2>&1
    rc=$?
    echo "$name: exit $rc in $(( $(date +%s) - start ))s; $(grep -E '^\[  (PASSED|FAILED)' "$out/$name.log" | tr '\n' ' ')"
    [[ $rc -ne 0 ]] && { status=1; grep -E "Failure|FAILED|error|what\(\)" "$out/$name.log" | head -20; }
  done
fi
if [[ $what == sanitize || $what == all ]]; then
  for t in "$bin"/gpu_runtime_tests "$bin"/gpu_container_tests; do
    name=$(basename "$t")
    timeout 400 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$t" --gtest_brief=1 \
      --gtest_filter="${SANITIZE_FILTER:-*}" > "$out/memcheck_$name.log" 2>&1
    echo "memcheck $name: exit $?; $(grep -E 'ERROR SUMMARY' "$out/memcheck_$name.log" | tail -1)"
  done
fi
if [[ $what == bench || $what == all ]]; then
  for b in "$bin"/bench_*; do
    name=$(basename "$b")
    timeout 400 "$b" --benchmark_filter="$filter" --benchmark_out="$out/$name.json" --benchmark_out_format=json \
      > "$out/$name.txt" 2>&1
    echo "$name: exit $?"
    tail -40 "$out/$name.txt"
  done
fi
exit $status
