#!/usr/bin/env bash
# scripts/install-deps.sh on machines where packages come from elsewhere and no package mirror
# answers: apt-get is stubbed to fail, tools are stubs on a PATH of their own, and a stub cmake
# reports which libraries it finds. The last case runs the real CMake of this machine.
#   install_deps_test.sh <path of install-deps.sh>
set -uo pipefail
script=${1:?usage: install_deps_test.sh <install-deps.sh>}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
all_libraries="CUDAToolkit GTest benchmark nlohmann_json CLI11 MPI"
cmake_version=3.25.1

stub() {  # stub <dir> <name> <body>
  printf '#!%s\n%s\n' "$BASH" "$3" > "$1/$2"
  chmod +x "$1/$2"
}

# A bin folder with only what the script itself uses, apt-get and sudo that fail and log, a
# root id, a stub cmake and compiler, and the tools named in $@.
make_bin() {
  local bin=$work/bin
  rm -rf "$bin" && mkdir -p "$bin"
  local tool
  for tool in env mktemp rm tail; do ln -s "$(command -v "$tool")" "$bin/$tool"; done
  stub "$bin" apt-get 'echo "apt-get $*" >> "$APT_LOG"; echo "E: Could not connect to the mirror" >&2; exit 100'
  stub "$bin" id 'echo 0'
  stub "$bin" c++ 'exit 0'
  stub "$bin" cmake 'if [[ $1 == --version ]]; then echo "cmake version $FAKE_CMAKE_VERSION"; exit 0; fi
for name in $FAKE_CMAKE_FOUND; do echo "-- multigpu-deps: found $name"; done
echo "-- multigpu-deps: probed"'
  for tool in "$@"; do stub "$bin" "$tool" 'exit 0'; done
  echo "$bin"
}

# run <case> <expected exit: 0 or 1> <PATH> <libraries the stub cmake finds> [pattern...]
# A pattern is text the output must hold; !text, text it must not hold; log:text and
# !log:text, the same for the arguments apt-get was called with.
run() {
  local name=$1 want=$2 path=$3 found=$4
  shift 4
  : > "$work/apt.log"
  local out rc
  out=$(PATH=$path APT_LOG=$work/apt.log FAKE_CMAKE_FOUND=$found FAKE_CMAKE_VERSION=$cmake_version \
        "$BASH" "$script" 2>&1)
  rc=$?
  local ok=1
  [[ $rc == "$want" ]] || ok=0
  local pattern log
  log=$(< "$work/apt.log")
  for pattern in "$@"; do
    case $pattern in
      '!log:'*) [[ $log != *"${pattern#!log:}"* ]] || { ok=0; echo "  apt-get was called with: ${pattern#!log:}"; } ;;
      log:*) [[ $log == *"${pattern#log:}"* ]] || { ok=0; echo "  apt-get was not called with: ${pattern#log:}"; } ;;
      '!'*) [[ $out != *"${pattern#!}"* ]] || { ok=0; echo "  the output must not hold: ${pattern#!}"; } ;;
      *) [[ $out == *"$pattern"* ]] || { ok=0; echo "  the output must hold: $pattern"; } ;;
    esac
  done
  if ((ok)); then
    echo "ok: $name (exit $rc)"
  else
    echo "FAILED: $name (exit $rc, expected $want):"
    echo "$out" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}

bin=$(make_bin ninja ccache mpirun)
run "everything present, tools on PATH only" 0 "$bin" "$all_libraries" '!install-deps' '!log:apt-get'

bin=$(make_bin ninja)
run "optional parts missing, no mirror" 0 "$bin" "CUDAToolkit nlohmann_json CLI11" \
  'log:install' 'no package mirror within reach' \
  'left out (optional): ccache' 'left out (optional): Google Benchmark' 'left out (optional): MPI' \
  'left out (optional): mpirun' 'left out: GoogleTest' 'the build can go on' '!Ninja' '!nlohmann_json'

bin=$(make_bin ninja-build ccache)
run "ninja as ninja-build, no mirror" 0 "$bin" "$all_libraries" \
  'left out (optional): mpirun' 'the build can go on' '!Ninja'
rm "$bin/apt-get"
run "optional parts missing, not Debian" 0 "$bin" "CUDAToolkit GTest nlohmann_json CLI11" \
  'no apt-get here' 'left out (optional): Google Benchmark' 'the build can go on'

bin=$(make_bin ccache mpirun)
run "Ninja missing, no mirror" 1 "$bin" "$all_libraries" \
  'log:ninja-build' 'missing, and the build needs it: Ninja' 'ninja-build' 'pip install ninja' \
  'the build cannot go on'

# A mirror that answers: the stub installs ninja-build as a ninja on this PATH.
stub "$bin" apt-get 'echo "apt-get $*" >> "$APT_LOG"
[[ $* == *install*ninja-build* ]] && printf "#!/bin/sh\nexit 0\n" > "${0%/*}/ninja" && chmod +x "${0%/*}/ninja"
exit 0'
run "Ninja missing, a mirror answers" 0 "$bin" "$all_libraries" \
  'log:update' 'log:ninja-build' 'installing ninja-build' 'the build can go on' '!Ninja'

bin=$(make_bin ninja ccache mpirun)
run "nlohmann_json and CLI11 missing, no mirror" 1 "$bin" "CUDAToolkit GTest benchmark MPI" \
  'log:nlohmann-json3-dev libcli11-dev' 'missing, and the build needs it: nlohmann_json' \
  'missing, and the build needs it: CLI11' 'the build cannot go on'

run "no CUDA toolkit" 1 "$bin" "GTest benchmark nlohmann_json CLI11 MPI" \
  'missing, and the build needs it: the CUDA toolkit' '!log:install'

cmake_version=3.22.1
run "CMake too old" 1 "$bin" "$all_libraries" \
  'missing, and the build needs it: CMake 3.25' 'log:cmake' 'not looked for'
cmake_version=3.25.1

# The real CMake looks for the libraries on this machine, which configured this build: the
# build can go on, whatever optional part is missing. apt-get and sudo still fail.
stubs=$work/stubs
mkdir -p "$stubs"
stub "$stubs" apt-get 'echo "apt-get $*" >> "$APT_LOG"; exit 100'
stub "$stubs" sudo 'exec "$@"'
run "this machine, real CMake" 0 "$stubs:$PATH" "" '!missing, and the build needs it' '!not looked for'

if ((failures)); then
  echo "$failures case(s) failed"
  exit 1
fi
echo "all cases passed"
