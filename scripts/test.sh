#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds warning-free, runs
# unit, end-to-end and documentation tests with CTest, then the fault
# injection suite in quick mode (scripts/chaos --quick: every backend
# through every scenario, about 10 minutes; alone, so that its timing
# checks do not share the CPUs with the other tests). Extra arguments go to
# ctest (e.g. -R e2e) and skip the chaos run. DLOCK_SANITIZE=address;undefined
# or thread builds a sanitized tree in build-<sanitizer> instead (and skips
# the chaos run too).
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
if [ $# -eq 0 ] && [ -z "${DLOCK_SANITIZE:-}" ]; then
  DLOCK="$PWD/$build/dlock" scripts/chaos --quick
fi
