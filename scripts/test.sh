#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds warning-free, and runs
# unit, end-to-end and documentation tests with CTest. Extra arguments go to
# ctest (e.g. -R e2e). DLOCK_SANITIZE=address;undefined or thread builds a
# sanitized tree in build-<sanitizer> instead.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps

build=build
cmake_args=(-DDLOCK_WERROR=ON)
if [ -n "${DLOCK_SANITIZE:-}" ]; then
  build="build-$(echo "$DLOCK_SANITIZE" | tr ';' '-')"
  cmake_args+=("-DDLOCK_SANITIZE=$DLOCK_SANITIZE" -DCMAKE_BUILD_TYPE=Debug)
fi
cmake -S . -B "$build" "${cmake_args[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
scripts/gen-man --check
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
