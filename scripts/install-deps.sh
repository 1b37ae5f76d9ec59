#!/usr/bin/env bash
# Installs, on Debian or Ubuntu, the packages the build, the tests and the tools need and the
# CUDA toolkit does not bring; does nothing when they are all there. README command 1 and 2
# and .ci/run start with it.
#
#   ninja-build           the build tool of the CMake presets
#   ccache                faster rebuilds (used when found)
#   libgtest-dev          the tests
#   libbenchmark-dev      the benchmarks
#   nlohmann-json3-dev    the doctor's JSON report
#   libcli11-dev          the command lines of the doctor, the demo and the examples
#   libopenmpi-dev, openmpi-bin
#                         the MPI communicator and the multi-process tests
#
# Elsewhere (another distribution, or no root and no sudo) it names what is missing and
# exits 0: CMake then reports each missing package by name, and the parts that need it are
# left out where they are optional. MULTIGPU_SKIP_DEPS=1 skips the whole check.
set -euo pipefail

[[ ${MULTIGPU_SKIP_DEPS:-0} == 1 ]] && exit 0

packages=(ninja-build ccache libgtest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev libopenmpi-dev openmpi-bin)

if ! command -v dpkg > /dev/null || ! command -v apt-get > /dev/null; then
  echo "install-deps: not a Debian or Ubuntu system: install by hand what CMake reports missing" \
       "(Ninja, GoogleTest, Google Benchmark, nlohmann_json, CLI11, an MPI)" >&2
  exit 0
fi

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2> /dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$package")
done
((${#missing[@]} == 0)) && exit 0

as_root=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo > /dev/null; then
    echo "install-deps: missing ${missing[*]}, and installing needs root or sudo" >&2
    exit 0
  fi
  as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
