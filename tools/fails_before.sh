#!/usr/bin/env bash
# Runs today's tests against an earlier library, to show that a new test fails without its
# fix (device runs only). BASE holds the earlier `include/` and `src/`, made beforehand on
# the development machine, where git is, and carried to the device (keep it ignored):
#   mkdir -p build-base && git archive REF include src | tar -x -C build-base
# Usage: tools/fails_before.sh BASE TARGET FILTER
#   e.g. tools/fails_before.sh build-base gpu_schedule_tests '*ArenaThatGrows*'
# Builds TARGET from a copy of this tree whose include/ and src/ are BASE's, runs FILTER,
# and exits 0 when the test FAILS there (what a new test must do), 1 when it passes.
set -u
export PATH=/opt/torch/.venv/bin:$PATH
base=${1:?BASE}
target=${2:?TARGET}
filter=${3:?FILTER}
[[ -d $base/include && -d $base/src ]] || { echo "fails_before: $base has no include/ and src/" >&2; exit 2; }
tree=/tmp/multigpu_before
rm -rf "$tree"
mkdir -p "$tree"
tar -c --exclude=./build --exclude=./build-gpu --exclude="./$base" . | tar -x -C "$tree"
rm -rf "$tree/include" "$tree/src"
cp -r "$base/include" "$base/src" "$tree/"
cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=native > "$tree/configure.log" 2>&1 &&
  cmake --build "$tree/build" --target "$target" > "$tree/build.log" 2>&1 ||
  { tail -30 "$tree/configure.log" "$tree/build.log"; exit 2; }
"$tree/build/tests/$target" --gtest_filter="$filter" 2>&1 | tail -20
if [[ ${PIPESTATUS[0]} -ne 0 ]]; then
  echo "fails_before: $filter fails against $base, as a new test must"
  exit 0
fi
echo "fails_before: $filter PASSES against $base: it does not show the defect"
exit 1
