#!/usr/bin/env bash
# File backend: the job inherits the lock file's descriptor. kill -9 of dlock
# kills the job (PR_SET_PDEATHSIG) but not the processes it started; they
# still hold the descriptor, so the kernel keeps the lock until they have
# ended too. A normal release unlocks for every copy of the descriptor.
SCENARIO="kill -9 leaves the lock to the descendants of the job"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/descendants_lib.sh"

check_kill9_leaves_lock_to_descendants d
check_release_with_escaped_copy e "$LOCKDIR/dlock/e.lock"
pass
