#!/usr/bin/env bash
# --shared: readers hold the lock together, a writer excludes them and is
# excluded by them, each holder with a fence of its own.
# Runs once per backend that offers shared locks: bash shared_test.sh KIND.
SCENARIO="shared lock: readers together, a writer alone"
. "$(dirname "$0")/lib.sh"
use_backend "${1:-file}"

check_readers_writer rw --ttl 2s
pass
