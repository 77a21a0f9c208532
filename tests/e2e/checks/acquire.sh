# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The acquire checks (lib.sh sources this file): its keeper and its --json
# document.

# Session-bound backends: acquire leaves a keeper process holding the lock
# (of a shared lock or a semaphore: the holder with the latest fence).
keeper_of() {
  "${DL[@]}" status "$1" --json 2>/dev/null | json 'max(d["holders"], key=lambda h: h["fence"] or 0)["pid"]'
}

# acquire_bg NAME OPTS...: token=$(dlock acquire NAME OPTS) must return: the
# keeper may not keep the substitution's pipe open. Sets token and keeper.
acquire_bg() {
  local name=$1
  shift
  rm -f "$tmpdir/acq.rc" "$tmpdir/acq.token"
  (
    t=$("${DL[@]}" acquire "$name" "$@" 2>"$tmpdir/acq.err" </dev/null)
    echo $? >"$tmpdir/acq.rc.tmp"
    printf '%s' "$t" >"$tmpdir/acq.token"
    mv "$tmpdir/acq.rc.tmp" "$tmpdir/acq.rc"
  ) &
  track $!
  wait_until -t 5 test -e "$tmpdir/acq.rc" ||
    fail "t=\$(dlock acquire $name $*) did not return within 5s: something keeps its stdout/stderr open"
  [ "$(cat "$tmpdir/acq.rc")" = 0 ] || fail "acquire $name exited $(cat "$tmpdir/acq.rc"): $(cat "$tmpdir/acq.err")"
  token=$(cat "$tmpdir/acq.token")
  [[ $token =~ ^[^[:space:]]+$ ]] || fail "acquire $name printed '$token', expected a token only"
  keeper=$(keeper_of "$name")
  [[ $keeper =~ ^[0-9]+$ ]] || fail "status $name --json shows no holder pid after acquire"
  track "$keeper"
  is_alive "$keeper" || fail "the holder pid $keeper of $name is not a live process (the keeper)"
}

# check_acquire_json NAME TTL: `dlock acquire NAME --ttl TTL --json` prints
# one document with name, token, fence, ttl_ms and expires_at: ttl_ms is the
# lease left when it was printed (at most TTL), expires_at that instant plus
# ttl_ms; a keeper adds keeper_window_ms and renew_by. Leaves the document
# in $out.
check_acquire_json() {
  local before after
  before=$(now_ms)
  capture "${DL[@]}" acquire "$1" --ttl "$2" --json
  after=$(now_ms)
  [ "$rc" = 0 ] || fail "acquire --json exited $rc; stderr: $err"
  printf '%s' "$out" >"$tmpdir/acq.json"
  python3 - "$tmpdir/acq.json" "$1" "$(duration_ms "$2")" "$before" "$after" <<'PY' || fail "acquire --json is wrong: $out"
import datetime, json, sys, re
d = json.load(open(sys.argv[1]))
ttl, before, after = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def ms(text):
    assert isinstance(text, str) and re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", text), d
    when = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(when.timestamp() * 1000 + 0.5)
assert set(d) >= {"name", "token", "fence", "ttl_ms", "expires_at"}, d
assert d["name"] == sys.argv[2], d
assert isinstance(d["token"], str) and d["token"], d
assert isinstance(d["fence"], int) and d["fence"] > 0, d
assert isinstance(d["ttl_ms"], int) and 0 < d["ttl_ms"] <= ttl, d
assert before + d["ttl_ms"] - 1 <= ms(d["expires_at"]) <= min(after + d["ttl_ms"] + 1, after + ttl), d
if "keeper_window_ms" in d:
    assert isinstance(d["keeper_window_ms"], int) and d["ttl_ms"] <= d["keeper_window_ms"] <= ttl, d
    assert ms(d["expires_at"]) <= ms(d["renew_by"]) <= after + ttl, d
PY
}
duration_ms() { case $1 in *ms) echo "${1%ms}" ;; *s) echo $((${1%s} * 1000)) ;; esac; }
