#!/usr/bin/env bash
# --log: every event of a run reaches real receivers as one structured
# record: a JSON-lines FILE, stderr (logfmt), rsyslog (RFC 5424 on a socket
# of its own) and systemd-journald (its native protocol, run in a private
# mount namespace so that it owns nothing of the host's). One round of runs
# makes each event: acquired and released, busy, interrupted, lost (release
# --force), max-runtime, unavailable (skip and run) and unlocked-end. A
# receiver that is missing fails the test; a log that cannot be opened
# (no socket) is one warning and the run goes on.
SCENARIO="--log: one record per event to a file, stderr, rsyslog and journald"
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || fail "needs root (journald in a private mount namespace)"
command -v rsyslogd >/dev/null || fail "rsyslogd not found (Debian package rsyslog; scripts/install-deps)"
[ -x /lib/systemd/systemd-journald ] || fail "systemd-journald not found (Debian package systemd)"
dead="redis://127.0.0.1:$(free_port)"

# events LOG...: one round of runs on lock ev with `--log LOG`.
events() {
  local log=("$@") pid
  capture "${DL[@]}" run "${log[@]}" ev -- true
  [ "$rc" = 0 ] || fail "${log[*]}: a plain run exited $rc: $err"
  start_holder h ev
  capture "${DL[@]}" run -q "${log[@]}" ev -- true
  [ "$rc" = 75 ] || fail "${log[*]}: a busy run exited $rc"
  "${DL[@]}" run "${log[@]}" --wait 20s ev -- true 2>/dev/null &
  pid=$!
  track "$pid"
  wait_until has_waiter ev || fail "${log[*]}: the waiter did not queue"
  kill -TERM "$pid"
  wait_exit "$pid"
  [ "$rc" = 143 ] || fail "${log[*]}: an interrupted wait exited $rc"
  release_holder h
  wait_exit "$HOLDER_PID"
  "${DL[@]}" run "${log[@]}" ev -- sleep 30 2>/dev/null &
  pid=$!
  track "$pid"
  wait_until is_held ev || fail "${log[*]}: the job to lose its lock did not start"
  "${DL[@]}" release ev --force >/dev/null 2>&1
  wait_exit "$pid"
  [ "$rc" = 76 ] || fail "${log[*]}: a run whose lock was broken exited $rc"
  capture "${DL[@]}" run "${log[@]}" --max-runtime 200ms --kill-after 0 ev -- sleep 30
  [ "$rc" = 124 ] || fail "${log[*]}: --max-runtime exited $rc"
  capture "$DLOCK_BIN" -b "$dead" run -q "${log[@]}" --if-unavailable skip ev -- true
  [ "$rc" = 75 ] || fail "${log[*]}: --if-unavailable skip exited $rc"
  capture "$DLOCK_BIN" -b "$dead" run -q "${log[@]}" --if-unavailable run ev -- sh -c 'exit 3'
  [ "$rc" = 3 ] || fail "${log[*]}: --if-unavailable run exited $rc, not the job's 3"
}

# check_records WHAT FILE: FILE holds JSON objects, one per line, with
# event, name and the fields each event must have.
check_records() {
  /usr/bin/python3 - "$1" "$2" <<'EOF' || fail "$1: the records are not what they should be (above)"
import json, sys
what, path = sys.argv[1], sys.argv[2]
records = [json.loads(line) for line in open(path) if line.strip()]
events = [r["event"] for r in records]
want = ["acquired", "released", "busy", "interrupted", "acquired", "lost", "acquired", "max-runtime",
        "unavailable", "unavailable", "unlocked-end"]
if events != want:
    sys.exit(f"{what}: events {events}, expected {want}")
need = {"acquired": ["fence", "wait_ms"], "released": ["fence", "duration_ms", "job_status", "renewals"],
        "busy": ["wait_ms", "exit_status"], "interrupted": ["cause"], "lost": ["cause", "fence"],
        "max-runtime": ["cause", "duration_ms"], "unavailable": ["action", "cause"],
        "unlocked-end": ["job_status", "duration_ms"]}
for r in records:
    missing = [k for k in need[r["event"]] + ["name", "namespace", "backend", "host", "pid"] if str(r.get(k, "")) == ""]
    if missing or r["name"] != "ev":
        sys.exit(f"{what}: {r} lacks {missing}")
    if any("token" in k.lower() or "password" in k.lower() for k in r):
        sys.exit(f"{what}: a record names a secret: {r}")
actions = [r["action"] for r in records if r["event"] == "unavailable"]
if actions != ["skip", "run"]:
    sys.exit(f"{what}: unavailable actions {actions}")
if [r for r in records if r["event"] == "unlocked-end"][0]["job_status"] not in (3, "3"):
    sys.exit(f"{what}: unlocked-end without the job's status 3")
print(f"ok: {what}: {len(records)} records")
EOF
}

# A FILE: JSON lines.
events --log "$tmpdir/events.jsonl"
check_records "--log FILE" "$tmpdir/events.jsonl"
grep -q '"time":"20[0-9-]*T[0-9:.]*Z"' "$tmpdir/events.jsonl" || fail "--log FILE records have no UTC time"

# stderr: logfmt lines, even with -q.
capture "${DL[@]}" run -q --log stderr ev -- true
[ "$(line_count "$err")" = 2 ] || fail "--log stderr wrote $(line_count "$err") lines, expected 2: $err"
case $err in "dlock: event=acquired name=ev fence="*"dlock: event=released name=ev fence="*) ;;
*) fail "--log stderr lines are not logfmt records: $err" ;; esac

# rsyslog, on a socket of its own, writing each record's parsed fields.
mkdir -p "$tmpdir/rsyslog"
cat >"$tmpdir/rsyslog/rsyslog.conf" <<EOF
global(workDirectory="$tmpdir/rsyslog")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="$tmpdir/rsyslog/log.sock" UseSpecialParser="off" ParseHostname="on")
template(name="fields" type="list") {
  property(name="syslogfacility-text") constant(value="|") property(name="syslogseverity-text")
  constant(value="|") property(name="app-name") constant(value="|") property(name="procid")
  constant(value="|") property(name="msgid") constant(value="|") property(name="structured-data")
  constant(value="|") property(name="msg") constant(value="\n")
}
*.* action(type="omfile" file="$tmpdir/rsyslog/out.log" template="fields")
EOF
rsyslogd -n -f "$tmpdir/rsyslog/rsyslog.conf" -i "$tmpdir/rsyslog/pid" >"$tmpdir/rsyslog/stdout" 2>&1 &
track $!
wait_until test -S "$tmpdir/rsyslog/log.sock" || fail "rsyslogd did not start: $(cat "$tmpdir/rsyslog/stdout")"
events --log "syslog:$tmpdir/rsyslog/log.sock"
wait_until -t 5 sh -c '[ "$(grep -c . "$1")" -ge 11 ]' _ "$tmpdir/rsyslog/out.log" ||
  fail "rsyslog received $(grep -c . "$tmpdir/rsyslog/out.log" 2>/dev/null) records, expected 11"
/usr/bin/python3 - "$tmpdir/rsyslog/out.log" "$tmpdir/rsyslog.jsonl" <<'EOF' || fail "rsyslog's records (above)"
import json, re, sys
out = open(sys.argv[2], "w")
severity = {"acquired": "info", "released": "info", "busy": "notice", "interrupted": "notice", "lost": "err",
            "max-runtime": "warning", "unavailable": "err", "unlocked-end": "warning"}
for line in open(sys.argv[1]):
    facility, sev, app, procid, msgid, sd, msg = line.rstrip("\n").split("|", 6)
    if (facility, app) != ("user", "dlock") or not procid.isdigit() or severity.get(msgid) != sev or not msg:
        sys.exit(f"rsyslog parsed {line!r}")
    m = re.fullmatch(r'\[dlock@32473((?: [a-z_]+="(?:[^"\\\]]|\\.)*")+)\]', sd)
    if not m:
        sys.exit(f"structured data {sd!r}")
    fields = {k: re.sub(r'\\(.)', r'\1', v) for k, v in re.findall(r' ([a-z_]+)="((?:[^"\\]|\\.)*)"', m.group(1))}
    fields.update(host="-", pid=procid)
    if fields.get("event") != msgid:
        sys.exit(f"MSGID {msgid} but event {fields.get('event')}")
    out.write(json.dumps(fields) + "\n")
EOF
check_records "--log syslog (rsyslog)" "$tmpdir/rsyslog.jsonl"
sed 's/^/  rsyslog: /' "$tmpdir/rsyslog/out.log"

# systemd-journald, its runtime directories bind-mounted from here.
mkdir -p "$tmpdir/jrun" "$tmpdir/jlog" /run/systemd /run/log
unshare -m sh -c 'mount --make-rprivate / && mount --bind "$1" /run/systemd && mount --bind "$2" /run/log &&
  exec /lib/systemd/systemd-journald' journald "$tmpdir/jrun" "$tmpdir/jlog" >"$tmpdir/journald.out" 2>&1 &
track $!
wait_until test -S "$tmpdir/jrun/journal/socket" || fail "journald did not start: $(cat "$tmpdir/journald.out")"
events --log "journal:$tmpdir/jrun/journal/socket"
journal() { journalctl -D "$tmpdir/jlog/journal" SYSLOG_IDENTIFIER=dlock -o json --no-pager 2>/dev/null; }
wait_until -t 5 sh -c '[ "$(journalctl -D "$1" SYSLOG_IDENTIFIER=dlock -o json --no-pager 2>/dev/null | grep -c .)" -ge 11 ]' \
  _ "$tmpdir/jlog/journal" || fail "journald holds $(journal | grep -c .) dlock records, expected 11"
journal | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    fields = {k[6:].lower(): v for k, v in e.items() if k.startswith("DLOCK_")}
    if e["PRIORITY"] not in "3456" or not e["MESSAGE"] or e["SYSLOG_FACILITY"] != "1":
        sys.exit(f"journal entry {e}")
    fields["pid"] = e["SYSLOG_PID"]
    print(json.dumps(fields))' >"$tmpdir/journal.jsonl" || fail "journald's entries (above)"
check_records "--log journal (systemd-journald)" "$tmpdir/journal.jsonl"
journal | head -1 | /usr/bin/python3 -c 'import json,sys; e=json.load(sys.stdin); print("  journald:", {k: v for k, v in e.items() if not k.startswith("_")})'

# No receiver: one warning, and the run goes on with the job's status.
capture "${DL[@]}" run --log "syslog:$tmpdir/nothing.sock" ev -- sh -c 'exit 4'
[ "$rc" = 4 ] || fail "a run whose syslog socket is missing exited $rc, not the job's 4"
assert_one_line_message "missing syslog socket" "$err"
case $err in *warning*"$tmpdir/nothing.sock"*) ;; *) fail "no warning for a missing syslog socket: $err" ;; esac
capture "${DL[@]}" run --log "$tmpdir/no/such/dir/log" ev -- true
[ "$rc" = 0 ] || fail "a run whose log file cannot be created exited $rc"
capture "${DL[@]}" run --log '' ev -- true
[ "$rc" = 64 ] || fail "--log '' exited $rc, expected 64"
# A symlink planted where the log goes (as another user could in /tmp):
# not followed, its target unchanged; one warning, the job's status.
printf 'root:x:0:0\n' >"$tmpdir/precious"
ln -s "$tmpdir/precious" "$tmpdir/planted.log"
capture "${DL[@]}" run --log "$tmpdir/planted.log" ev -- sh -c 'exit 3'
[ "$rc" = 3 ] || fail "a run whose log file is a symlink exited $rc, not the job's 3"
assert_one_line_message "a symlinked log file" "$err"
case $err in *warning*"symbolic link, not followed"*) ;; *) fail "no warning for a symlinked log file: $err" ;; esac
[ "$(cat "$tmpdir/precious")" = "root:x:0:0" ] || fail "the symlink's target was written: $(cat "$tmpdir/precious")"
pass
