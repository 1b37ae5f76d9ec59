#!/usr/bin/env bash
# Checks that the build, the tests and the tools find what they need beyond the CUDA toolkit,
# and installs what is missing with apt-get on Debian or Ubuntu. README commands 1 and 2 and
# .ci/run start with it.
#
# It decides by what the build will find, not by package names: a tool on PATH counts (ninja
# from pip, ccache or mpirun from a module or a conda environment), and so does a library that
# CMake finds, looked for by a small CMake project as this project looks for it (so
# CMAKE_PREFIX_PATH and CUDACXX count too).
#
#   needed     CMake 3.25+ (cmake), Ninja (ninja-build), a C++ compiler (g++), the CUDA
#              toolkit (from NVIDIA), nlohmann_json (nlohmann-json3-dev), CLI11 (libcli11-dev)
#   tests      GoogleTest (libgtest-dev): without it CMake leaves the tests out
#   optional   ccache (ccache), Google Benchmark (libbenchmark-dev), MPI (libopenmpi-dev) and
#              mpirun (openmpi-bin)
#
# What is missing it installs, as root or through sudo, when apt-get is there. It names every
# part it leaves out, and exits 0 whenever the build can go on, without a package mirror too;
# 1, saying what to install, when something needed is still missing. MULTIGPU_SKIP_DEPS=1
# skips the whole check.
set -uo pipefail

[[ ${MULTIGPU_SKIP_DEPS:-0} == 1 ]] && exit 0

say() { echo "install-deps: $*"; }

# One entry per thing the build looks for: name|kind|Debian package|what is left out without it
# (for needed things: where else to get it).
catalogue=(
  "CMake 3.25 or newer|needed|cmake|pip install cmake, or CMake's own installer"
  "Ninja|needed|ninja-build|pip install ninja, or any ninja on PATH"
  "a C++20 compiler|needed|g++|GCC 12 or newer as c++ or g++ on PATH, or CXX"
  "the CUDA toolkit (nvcc)|needed||CUDA 13.0 from NVIDIA, with nvcc on PATH or CUDACXX set"
  "nlohmann_json 3.2|needed|nlohmann-json3-dev|set CMAKE_PREFIX_PATH to its prefix"
  "CLI11|needed|libcli11-dev|set CMAKE_PREFIX_PATH to its prefix"
  "GoogleTest|tests|libgtest-dev|CMake leaves the tests out"
  "ccache|optional|ccache|rebuilds are not cached"
  "Google Benchmark|optional|libbenchmark-dev|the benchmarks are not built"
  "MPI|optional|libopenmpi-dev|multigpu::mpi, its tests and examples/mpi_saxpy are not built"
  "mpirun|optional|openmpi-bin|the MPI tests report Skipped"
)

have() { command -v "$1" > /dev/null 2>&1; }

cmake_is_new_enough() {
  have cmake || return 1
  local version
  version=$(cmake --version 2> /dev/null) || return 1
  [[ $version =~ version\ ([0-9]+)\.([0-9]+) ]] || return 1
  local major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
  ((major > 3 || (major == 3 && minor >= 25)))
}

have_compiler() {
  [[ -n ${CXX:-} ]] && have "${CXX%% *}" && return 0
  have c++ || have g++ || have clang++
}

# The libraries, as the project's CMakeLists.txt files look for them. Sets found_libraries to
# "name name ..." and returns 0 when the probe ran.
probe_libraries() {
  found_libraries=""
  probe_log=""
  local dir generator=()
  dir=$(mktemp -d) || return 1
  (have ninja || have ninja-build || have samu) && generator=(-G Ninja)
  printf '%s\n' \
    'cmake_minimum_required(VERSION 3.25)' \
    'project(multigpu_deps LANGUAGES CXX)' \
    'function(report name found)' \
    '  if(${found})' \
    '    message(STATUS "multigpu-deps: found ${name}")' \
    '  endif()' \
    'endfunction()' \
    'find_package(CUDAToolkit QUIET)' \
    'report(CUDAToolkit CUDAToolkit_FOUND)' \
    'find_package(GTest QUIET)' \
    'report(GTest GTest_FOUND)' \
    'find_package(benchmark QUIET)' \
    'report(benchmark benchmark_FOUND)' \
    'find_package(nlohmann_json 3.2 QUIET)' \
    'report(nlohmann_json nlohmann_json_FOUND)' \
    'find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp)' \
    'report(CLI11 CLI11_INCLUDE_DIR)' \
    'find_package(MPI COMPONENTS CXX QUIET)' \
    'report(MPI MPI_CXX_FOUND)' \
    'message(STATUS "multigpu-deps: probed")' > "$dir/CMakeLists.txt"
  probe_log=$(cmake -S "$dir" -B "$dir/build" "${generator[@]}" 2>&1)
  rm -rf "$dir"
  local line
  while IFS= read -r line; do
    [[ $line =~ multigpu-deps:\ found\ ([A-Za-z0-9_]+) ]] && found_libraries+=" ${BASH_REMATCH[1]}"
  done <<< "$probe_log"
  [[ $probe_log == *"multigpu-deps: probed"* ]]
}

# Fills missing with the catalogue entries that the build would not find now, and unchecked
# with the libraries it could not look for (no CMake or compiler yet, or the probe failed:
# then CMake names whatever is missing when the project is configured).
check() {
  missing=()
  unchecked=()
  local probed=0 entry name
  found_libraries=""
  probe_log=""
  if cmake_is_new_enough && have_compiler && probe_libraries; then
    probed=1
  fi
  for entry in "${catalogue[@]}"; do
    name=${entry%%|*}
    local present=0
    case $name in
      CMake*) cmake_is_new_enough && present=1 ;;
      Ninja) (have ninja || have ninja-build || have samu) && present=1 ;;
      "a C++20 compiler") have_compiler && present=1 ;;
      ccache) have ccache && present=1 ;;
      mpirun) (have mpirun || have mpiexec) && present=1 ;;
      *)
        local library=${name%% *}
        [[ $name == "the CUDA toolkit"* ]] && library=CUDAToolkit
        [[ $name == "Google Benchmark" ]] && library=benchmark
        [[ $name == GoogleTest ]] && library=GTest
        if ((probed)); then
          [[ " $found_libraries " == *" $library "* ]] && present=1
        elif [[ $library == CUDAToolkit ]]; then
          (have nvcc || [[ -n ${CUDACXX:-} ]]) && present=1
        else
          unchecked+=("$entry")
          continue
        fi
        ;;
    esac
    ((present)) || missing+=("$entry")
  done
}

check
((${#missing[@]} + ${#unchecked[@]} == 0)) && exit 0

# Install what apt-get can (an unchecked library too: apt-get skips what is installed), then
# look again.
packages=()
for entry in "${missing[@]}" "${unchecked[@]}"; do
  IFS='|' read -r _ _ package _ <<< "$entry"
  [[ -n $package ]] && packages+=("$package")
done
if ((${#packages[@]} > 0)); then
  if ! have apt-get; then
    say "no apt-get here (not Debian or Ubuntu): install the rest by hand, as named below"
  else
    as_root=()
    if [[ $(id -u) -ne 0 ]]; then
      if have sudo; then
        as_root=(sudo)
      else
        say "installing ${packages[*]} needs root or sudo"
        packages=()
      fi
    fi
    if ((${#packages[@]} > 0)); then
      say "installing ${packages[*]}"
      apt=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
      updated=1
      "${apt[@]}" update -qq || updated=0
      if ! "${apt[@]}" install -y -qq --no-install-recommends "${packages[@]}"; then
        if ((updated)); then
          # One package this release lacks must not keep the others out.
          for package in "${packages[@]}"; do
            "${apt[@]}" install -y -qq --no-install-recommends "$package" ||
              say "apt-get could not install $package"
          done
        else
          say "apt-get update failed (no package mirror within reach?): nothing was installed"
        fi
      fi
    fi
  fi
  check
fi

# Report what is still missing: needed things stop the build, the rest is left out.
status=0
for entry in "${missing[@]}"; do
  IFS='|' read -r name kind package note <<< "$entry"
  case $kind in
    needed)
      if [[ -n $package ]]; then
        say "missing, and the build needs it: $name: install the Debian package $package, or $note" >&2
      else
        say "missing, and the build needs it: $name: install $note" >&2
      fi
      status=1
      ;;
    tests) say "left out: $name ($package): $note" ;;
    optional) say "left out (optional): $name ($package): $note" ;;
  esac
done
if ((${#unchecked[@]} > 0)); then
  names=""
  for entry in "${unchecked[@]}"; do names+="${names:+, }${entry%%|*}"; done
  say "not looked for: $names (CMake names any that is missing)"
  if [[ -n $probe_log ]]; then
    say "looking for them with CMake failed; its last lines:"
    tail -n 5 <<< "$probe_log"
  fi
fi
if ((status == 0)); then
  say "the build can go on"
else
  say "the build cannot go on until the above is installed" >&2
fi
exit $status
