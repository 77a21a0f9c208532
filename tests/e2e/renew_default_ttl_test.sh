#!/usr/bin/env bash
# `renew` without --ttl renews the lock for its own length (the one given to
# acquire or to the last renew --ttl), not for the config file's ttl; the
# scenario all backends share is in renew_default_ttl_lib.sh.
SCENARIO="renew without --ttl keeps the lock's own length"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/renew_default_ttl_lib.sh"

check_renew_keeps_length app/renewed
pass
