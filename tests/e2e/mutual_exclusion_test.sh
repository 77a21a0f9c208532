#!/usr/bin/env bash
# 16 workers x 25 locked read-sleep-write increments of one counter: no lost
# update, no two critical sections at once, fences strictly increasing.
SCENARIO="mutual exclusion"
. "$(dirname "$0")/lib.sh"

check_mutual_exclusion 16 25 c --wait forever
pass
