#!/usr/bin/env bash
# Every command against a hostile PostgreSQL port (tests/hostile/
# fake_server.py, loopback): libpq's SSLRequest answered with garbage; or
# answered "no SSL" and the startup packet answered with garbage, a
# truncated message, a close, the end of a query's answer, a 2 GiB
# ErrorResponse with a fast endless stream, a drip. libpq parses the
# start-up; each command still ends with 69 and one `dlock:` line within
# --connect-timeout (1s) plus a margin, with a peak RSS under 32 MiB; the
# job never starts; renew and release with a token of no acquire keeper
# exit 3 without asking the server, as documented. (Before: the endless
# ErrorResponse took dlock to 160-220 MB within the second: libpq buffers
# it whole.)
SCENARIO="hostile servers: every command on PostgreSQL"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"

for mode in ${HOSTILE_CASES:-pg-sslgarbage pg-garbage pg-truncated pg-close pg-other pg-huge pg-drip}; do
  start_fake "$mode"
  check_hostile_commands "$mode" "postgres://dlock@127.0.0.1:$FAKE_PORT/dlock" 3
  stop_fake
done
pass
