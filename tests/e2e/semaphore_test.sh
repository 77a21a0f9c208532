#!/usr/bin/env bash
# --limit 3: 12 contenders that wait never have more than 3 in the section,
# each slot has one holder at a time with increasing fences, all finish.
# Runs once per backend that offers semaphores: bash semaphore_test.sh KIND.
SCENARIO="semaphore: 12 contenders, --limit 3"
. "$(dirname "$0")/lib.sh"
use_backend "${1:-file}"

check_semaphore 12 3 sem --wait 30s --ttl 2s
pass
