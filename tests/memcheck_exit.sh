#!/usr/bin/env bash
# Runs a test program under compute-sanitizer memcheck with leak checking, for programs whose
# exit is what is tested (gpu_static_lifetime_tests). Skips (77) when the program skips by
# itself, which it does when no CUDA device is visible.
# Usage: tests/memcheck_exit.sh COMPUTE_SANITIZER PROGRAM [ARGS...]
set -u
sanitizer=${1:?compute-sanitizer}
shift
"$@" > /dev/null 2>&1
if [[ $? -eq 77 ]]; then
  echo "memcheck_exit: $1 skips (no CUDA device): skipping"
  exit 77
fi
exec "$sanitizer" --tool memcheck --leak-check full --error-exitcode 9 "$@"
