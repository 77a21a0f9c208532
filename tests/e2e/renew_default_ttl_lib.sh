# shellcheck shell=bash
# The scenario of `renew` without --ttl that every backend shares: it renews
# the lock for its own length, the one given to acquire or to the last
# renew --ttl, not for a default, and the config file's ttl (acquire's and
# run's default) does not change that. Source it after lib.sh and the
# backend's use_* helper, then call check_renew_keeps_length NAME.
#
#   check_renew_keeps_length NAME   acquire -t 5s, renew, renew -t 8s, renew,
#                                   release; fails unless each renewal
#                                   reports the length it should. Leaves
#                                   the token in RENEW_TOKEN and each step's
#                                   --json output in RENEW_JSON_<step>.
#   renew_length JSON               the lock's length as a renewal printed it:
#                                   a keeper's window where there is one,
#                                   else the lease's ttl_ms
#   on_renewed STEP                 called after each step (acquire, renew1,
#                                   renew_ttl, renew2), if the adapter
#                                   defines it, to look at the server

# shellcheck disable=SC2154 # tmpdir, DL, rc, out, err come from lib.sh

renew_length() { printf '%s' "$1" | json 'd.get("keeper_window_ms", d["ttl_ms"])'; }

# _check_length WHAT JSON LOW HIGH: the length printed lies in [LOW, HIGH] ms.
_check_length() {
  local what=$1 doc=$2 low=$3 high=$4 length
  length=$(renew_length "$doc") || fail "$what: no ttl_ms in its JSON: $doc"
  echo "$what: $length ms ($doc)"
  [ "$length" -ge "$low" ] && [ "$length" -le "$high" ] ||
    fail "$what printed a length of $length ms, not between $low and $high ms: $doc"
}

_status_left_at_most() {
  local what=$1 name=$2 most=$3 left
  capture "${DL[@]}" status "$name" --json
  [ "$rc" = 0 ] || fail "status after $what exited $rc (the lock should be held); stderr: $err"
  left=$(printf '%s' "$out" | json 'd["ttl_left_ms"]')
  [ "$left" = null ] && return 0
  [ "$left" -le "$most" ] || fail "status after $what shows $left ms left, more than the lock's $most ms: $out"
}

check_renew_keeps_length() {
  local name=$1 acquired
  # The ttl of the config file is the default of acquire and run only.
  printf 'ttl = 1m\n' >"$tmpdir/renew.conf"
  export DLOCK_CONFIG=$tmpdir/renew.conf

  capture "${DL[@]}" acquire "$name" -t 5s --json
  [ "$rc" = 0 ] || fail "acquire -t 5s exited $rc; stderr: $err"
  RENEW_JSON_acquire=$out
  RENEW_TOKEN=$(printf '%s' "$out" | json 'd["token"]')
  acquired=$(renew_length "$out")
  echo "acquire -t 5s: $acquired ms"
  [ "$(type -t on_renewed)" = function ] && on_renewed acquire

  # About 5 s: what acquire got (ZooKeeper: the session's), never 30 s or
  # the config's 1 min.
  capture "${DL[@]}" renew "$name" "$RENEW_TOKEN" --json
  [ "$rc" = 0 ] || fail "renew without --ttl exited $rc; stderr: $err"
  RENEW_JSON_renew1=$out
  _check_length "renew without --ttl after acquire -t 5s" "$out" $((acquired - 1000)) 5000
  _status_left_at_most "renew without --ttl" "$name" 5000
  [ "$(type -t on_renewed)" = function ] && on_renewed renew1

  # A renewal with a length makes it the lock's length (longer than
  # acquire's, so that the adapters' looks at the server and the release
  # fit in it on a machine busy with other tests: a 3 s length ran out
  # before the release under CI)...
  capture "${DL[@]}" renew "$name" "$RENEW_TOKEN" -t 8s --json
  [ "$rc" = 0 ] || fail "renew -t 8s exited $rc; stderr: $err"
  RENEW_JSON_renew_ttl=$out
  [ "$(type -t on_renewed)" = function ] && on_renewed renew_ttl
  acquired=$(renew_length "$out")

  # ...which the next renewal without one keeps.
  capture "${DL[@]}" renew "$name" "$RENEW_TOKEN" --json
  [ "$rc" = 0 ] || fail "the renew without --ttl after renew -t 8s exited $rc; stderr: $err"
  RENEW_JSON_renew2=$out
  _check_length "renew without --ttl after renew -t 8s" "$out" $((acquired - 1000)) 8000
  [ "$(type -t on_renewed)" = function ] && on_renewed renew2

  "${DL[@]}" release "$name" "$RENEW_TOKEN" || fail "release exited $?"
  unset DLOCK_CONFIG
}
