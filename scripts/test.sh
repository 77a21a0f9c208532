#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds warning-free, runs
# unit, end-to-end and documentation tests with CTest, then the fault
# injection suite in quick mode (scripts/chaos --quick: every backend
# through every scenario, about 10 minutes; alone, so that its timing
# checks do not share the CPUs with the other tests). Extra arguments go to
# ctest (e.g. -R e2e) and skip the chaos run. DLOCK_SANITIZE=address;undefined
# or thread builds a sanitized tree in build-<sanitizer> instead (and skips
# the chaos run too).
#
# --quick (first argument): the build, the unit tests, the conformance suite
# on file and Redis and the end-to-end core on the file backend, a few
# minutes, for the edit-and-test loop; CI and anything that touches a
# backend, the runner's timing or the harness runs the whole suite.
#
# Either way the suite fails if a test left a file in the source tree that
# git did not show before it began: tests write only under their temp dirs.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=''
if [ "${1:-}" = --quick ]; then
  quick=1
  shift
fi
untracked_before=$(git status --porcelain --untracked-files=all 2>/dev/null || true)

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
if [ -n "$quick" ]; then
  ctest --test-dir "$build" --output-on-failure -j"$(nproc)" \
    -R '^(unit:|conformance: (file|redis)$|e2e: )' "$@"
else
  ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
fi
if [ -z "$quick" ] && [ $# -eq 0 ] && [ -z "${DLOCK_SANITIZE:-}" ]; then
  DLOCK="$PWD/$build/dlock" scripts/chaos --quick
fi
untracked_after=$(git status --porcelain --untracked-files=all 2>/dev/null || true)
if [ "$untracked_after" != "$untracked_before" ]; then
  echo "test.sh: the tests changed the source tree (tests write only under their temp dirs):" >&2
  diff <(echo "$untracked_before") <(echo "$untracked_after") | sed -n 's/^> /  /p' >&2
  exit 1
fi
