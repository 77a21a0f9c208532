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
# ccache, where installed, keeps compiled objects between checkouts: paths
# are hashed relative to this one, so a fresh clone elsewhere reuses them.
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# Every python3 of the suite (the scripts/with-* wrappers, the fault
# injection, the tests) is Debian's, which has the modules install-deps
# installs, not whatever comes first in PATH: a pyenv shim there runs a
# shell script and several programs per call, about 1 s of CPU each under
# the suite's load, a few hundred times a run.
if [ -x /usr/bin/python3 ] && [ "$(command -v python3)" != /usr/bin/python3 ]; then
  mkdir -p "$build/python-bin"
  ln -sfn /usr/bin/python3 "$build/python-bin/python3"
  export PATH="$PWD/$build/python-bin:$PATH"
fi
cmake -S . -B "$build" "${cmake_args[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
scripts/gen-man --check
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
if [ $# -eq 0 ] && [ -z "${DLOCK_SANITIZE:-}" ]; then
  DLOCK="$PWD/$build/dlock" scripts/chaos --quick
fi
