#!/usr/bin/env bash
# The chaos suite's critical section, pure bash (no python start-up per job).
#
# Run under `dlock run`, with in the environment:
#   DLOCK_FENCE            the fencing token (from dlock)
#   CHAOS_REGISTER_PORT    the port of tests/chaos/register.py on 127.0.0.1
#   CHAOS_SECTION          a unique section id (client id + counter); default
#                          chaos-<pid>
#   CHAOS_LONG_PCT, CHAOS_LONG_MS   optional: in CHAOS_LONG_PCT percent of
#                          the sections, hold a random 0..CHAOS_LONG_MS ms
#                          instead (so that server faults find jobs that
#                          span renewals)
#   CHAOS_MODE             optional: sem (a --limit holder), r (a --shared
#                          reader) or w (a writer on a name that has
#                          readers); then DLOCK_SLOT (if dlock set it) goes
#                          with the fence, and the job sends ENTER/LEAVE
#                          instead of READ/WRITE (see register.py)
# Reads the register with the fence, sleeps a random 0-50 ms, writes value+1
# (sem and r: only leaves).
# Exit: 0 the write was accepted; 65 the register answered STALE (a newer
# fence has written: this job lost its lock); 69 the register is unreachable
# or did not answer.
port=${CHAOS_REGISTER_PORT:?CHAOS_REGISTER_PORT is not set}
fence=${DLOCK_FENCE:?DLOCK_FENCE is not set}
sid=${CHAOS_SECTION:-chaos-$$}

mode=${CHAOS_MODE:-}
slot=${DLOCK_SLOT:--}

exec 3<>"/dev/tcp/127.0.0.1/$port" || { echo "job: register 127.0.0.1:$port unreachable" >&2; exit 69; }
if [ -n "$mode" ]; then
  printf 'ENTER %s %s %s %s\n' "$mode" "$fence" "$slot" "$sid" >&3
else
  printf 'READ %s %s\n' "$fence" "$sid" >&3
fi
IFS= read -r -t 5 v <&3 || { echo "job: no answer to READ" >&2; exit 69; }
v=${v%$'\r'}
[[ $v =~ ^[0-9]+$ ]] || { echo "job: bad READ answer: $v" >&2; exit 69; }
printf -v d '0.%03d' $((RANDOM % 51))
if [ -n "${CHAOS_LONG_PCT:-}" ] && ((RANDOM % 100 < CHAOS_LONG_PCT)); then
  ms=$((RANDOM % ${CHAOS_LONG_MS:-1000}))
  printf -v d '%d.%03d' $((ms / 1000)) $((ms % 1000))
fi
sleep "$d"
if [ -z "$mode" ]; then
  printf 'WRITE %s %s %s\n' $((v + 1)) "$fence" "$sid" >&3
elif [ "$mode" = w ]; then
  printf 'LEAVE w %s %s %s %s\n' "$fence" "$slot" "$sid" $((v + 1)) >&3
else
  printf 'LEAVE %s %s %s %s -\n' "$mode" "$fence" "$slot" "$sid" >&3
fi
IFS= read -r -t 5 r <&3 || { echo "job: no answer to WRITE" >&2; exit 69; }
case ${r%$'\r'} in
  OK) exit 0 ;;
  STALE) exit 65 ;;
  *) echo "job: bad WRITE answer: $r" >&2; exit 69 ;;
esac
