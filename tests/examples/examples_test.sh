#!/usr/bin/env bash
# The examples in examples/ are real: the systemd units pass
# `systemd-analyze verify` (in a private root holding stand-ins for the
# programs they name) without a word; the Kubernetes CronJob is a batch/v1
# CronJob whose backend and password come from a Secret; and the command of
# every unit, crontab line and container runs as written, with dlock taken
# from the build, the lock backend swapped for a private file: directory
# and the job for a stand-in that records its run: it runs once, a second
# copy started while the first holds the lock exits 0 without running
# (where the example says -E 0), and of two copies of the leader service
# one runs and the other takes over once the first is stopped.
#
#   DLOCK_BIN=build/dlock tests/examples/examples_test.sh
set -euo pipefail
: "${DLOCK_BIN:?}"
here=$(cd "$(dirname "$0")/../.." && pwd)
examples=$here/examples
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL examples: $*" >&2; exit 1; }
pass_note() { echo "ok: $*"; }
# A process is gone once it is a zombie (PID 1 here does not reap orphans).
gone() { local s; s=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1); [ -z "$s" ] || [ "$s" = Z ]; }
wait_for() { # wait_for SECONDS COMMAND...
  local end=$(($(date +%s%N) / 1000000 + $1 * 1000))
  shift
  until "$@"; do
    (($(date +%s%N) / 1000000 < end)) || return 1
    sleep 0.02
  done
}

# The stand-in job: records its name and arguments, then waits until its
# release file exists (or 20 s), so a test can hold the lock as long as needed.
mkdir -p "$tmp/bin" "$tmp/locks" "$tmp/runs"
cat >"$tmp/bin/job" <<'JOB'
#!/bin/sh
name=$(basename "$0")
echo "$name $*" >>"$STANDIN_DIR/runs/$name"
i=0
while [ ! -e "$STANDIN_DIR/release-$name" ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i + 1)); done
JOB
chmod 755 "$tmp/bin/job"
export STANDIN_DIR=$tmp
printf 'secret-for-the-example\n' >"$tmp/password"
chmod 600 "$tmp/password"

# to_local COMMAND: the example's command line with dlock from the build,
# every other absolute program path a stand-in of the same name, and the
# password file a private one.
to_local() {
  local words=() w name
  read -r -a words <<<"$1"
  for w in "${words[@]}"; do
    case $w in
      /usr/bin/dlock) printf '%q ' "$DLOCK_BIN" ;;
      /etc/dlock/*) printf '%q ' "$tmp/password" ;;
      /usr/local/bin/* | /app/*)
        name=$(basename "$w")
        ln -sf "$tmp/bin/job" "$tmp/bin/$name"
        printf '%q ' "$tmp/bin/$name" ;;
      *) printf '%s ' "$w" ;;
    esac
  done
}

# check_command WHAT COMMAND JOBNAME BUSY_EXIT: COMMAND runs its job once
# and exits 0; a second copy while the first holds the lock exits BUSY_EXIT
# (empty: it waits, and runs after the first) without running it meanwhile.
check_command() {
  local what=$1 cmd job=$3 busy=$4 rc first
  cmd=$(to_local "$2")
  rm -f "$tmp/runs/$job" "$tmp/release-$job"
  env DLOCK_BACKEND="file://$tmp/locks" PATH=/usr/bin:/bin sh -c "$cmd" >"$tmp/out" 2>&1 &
  first=$!
  pids+=("$first")
  wait_for 10 test -s "$tmp/runs/$job" || fail "$what: the job did not start: $(cat "$tmp/out")"
  if [ -n "$busy" ]; then
    rc=0
    env DLOCK_BACKEND="file://$tmp/locks" PATH=/usr/bin:/bin sh -c "$cmd" >"$tmp/out2" 2>&1 || rc=$?
    [ "$rc" = "$busy" ] || fail "$what: a second copy while the lock is held exited $rc, expected $busy: $(cat "$tmp/out2")"
    [ ! -s "$tmp/out2" ] || fail "$what: the second copy printed: $(cat "$tmp/out2")"
    [ "$(wc -l <"$tmp/runs/$job")" = 1 ] || fail "$what: the job ran twice at once"
  fi
  touch "$tmp/release-$job"
  rc=0
  wait "$first" || rc=$?
  [ "$rc" = 0 ] || fail "$what: exited $rc: $(cat "$tmp/out")"
  pass_note "$what"
}

# --- systemd units -----------------------------------------------------
root=$tmp/root
mkdir -p "$root/etc/systemd/system" "$root/usr/lib/systemd" "$root/usr/bin" "$root/usr/local/bin"
cp -r /usr/lib/systemd/system "$root/usr/lib/systemd/"
cp "$examples"/systemd/*.service "$examples"/systemd/*.timer "$root/etc/systemd/system/"
units=()
for unit in "$examples"/systemd/*.service "$examples"/systemd/*.timer; do
  units+=("/etc/systemd/system/$(basename "$unit")")
  for program in $(sed -n 's/^ExecStart=//p' "$unit" | tr ' ' '\n' | grep '^/'); do
    case $program in /etc/*) continue ;; esac
    mkdir -p "$root$(dirname "$program")"
    printf '#!/bin/sh\n' >"$root$program"
    chmod 755 "$root$program"
  done
done
verify=$(systemd-analyze verify --root="$root" "${units[@]}" 2>&1) || fail "systemd-analyze verify failed: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify complains: $verify"
pass_note "systemd-analyze verify: ${units[*]##*/}"
grep -q '^KillMode=mixed' "$examples/systemd/nightly-report.service" || fail "nightly-report.service: no KillMode=mixed"
check_command "nightly-report.service ExecStart" "$(sed -n 's/^ExecStart=//p' "$examples/systemd/nightly-report.service")" \
  report.sh 0

# leader.service: two hosts start it; one runs the consumer, the other
# waits; SIGTERM to the leader's dlock (systemctl stop with KillMode=mixed)
# stops its consumer and releases, and the other takes over.
leader_cmd=$(to_local "$(sed -n 's/^ExecStart=//p' "$examples/systemd/leader.service")")
rm -f "$tmp/runs/consumer"
env DLOCK_BACKEND="file://$tmp/locks" sh -c "exec $leader_cmd" >"$tmp/l1.out" 2>&1 &
leader1=$!
pids+=("$leader1")
wait_for 10 test -s "$tmp/runs/consumer" || fail "leader.service: the first copy did not start the service: $(cat "$tmp/l1.out")"
env DLOCK_BACKEND="file://$tmp/locks" sh -c "exec $leader_cmd" >"$tmp/l2.out" 2>&1 &
leader2=$!
pids+=("$leader2")
# The second copy waits for the lock: the kernel lists its blocked flock.
has_waiter() {
  "$DLOCK_BIN" -b "file://$tmp/locks" status queue-consumer --json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; sys.exit(0 if (json.load(sys.stdin).get("waiters") or 0) >= 1 else 1)'
}
wait_for 10 has_waiter || fail "leader.service: the second copy never waited for the lock: $(cat "$tmp/l2.out")"
[ "$(wc -l <"$tmp/runs/consumer")" = 1 ] || fail "leader.service: two services run at once"
gone "$leader2" && fail "leader.service: the waiting copy exited: $(cat "$tmp/l2.out")"
kill -TERM "$leader1"
rc=0
wait "$leader1" || rc=$?
[ "$rc" = 143 ] || fail "leader.service: the stopped leader exited $rc, expected 143: $(cat "$tmp/l1.out")"
# (the count is read at each try, not once when wait_for is called)
consumer_runs() { [ "$(wc -l <"$tmp/runs/consumer")" = "$1" ]; }
wait_for 10 consumer_runs 2 ||
  fail "leader.service: the waiting copy did not take over: $(cat "$tmp/l2.out")"
touch "$tmp/release-consumer"
wait "$leader2" || fail "leader.service: the second leader exited $?: $(cat "$tmp/l2.out")"
pass_note "leader.service: one runs, the other takes over after SIGTERM"

# --- crontab -----------------------------------------------------------
crontab=$examples/cron/dlock.crontab
jobs=0
while read -r line; do
  case $line in '' | '#'*) continue ;; *=*) case ${line%%=*} in *' '*) ;; *) continue ;; esac ;; esac
  read -r m h dom mon dow user command <<<"$line"
  for field in "$m" "$h" "$dom" "$mon" "$dow"; do
    [[ $field =~ ^(\*|[0-9]+(-[0-9]+)?)(/[0-9]+)?(,([0-9]+(-[0-9]+)?))*$ ]] || fail "crontab: bad time field '$field' in: $line"
  done
  [ "$user" = root ] || fail "crontab: a line of /etc/cron.d names its user: $line"
  first=${command%% *}
  [[ $first == /* ]] || fail "crontab: the command does not start with an absolute path: $line"
  job=$(tr ' ' '\n' <<<"$command" | grep '^/usr/local/bin/' | head -n1)
  busy=
  [[ $command == *"-E 0"* ]] && busy=0
  check_command "crontab: $m $h $dom $mon $dow" "$command" "$(basename "$job")" "$busy"
  jobs=$((jobs + 1))
done <"$crontab"
((jobs >= 2)) || fail "crontab: only $jobs job lines"
grep -q '^PATH=/usr/bin:/bin$' "$crontab" || fail "crontab: no PATH line"

# --- Kubernetes CronJob --------------------------------------------------
/usr/bin/python3 - "$examples/kubernetes/cronjob.yaml" >"$tmp/k8s" <<'PY' || fail "kubernetes/cronjob.yaml: $(cat "$tmp/k8s")"
import shlex, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
def need(cond, what):
    if not cond:
        print(what); sys.exit(1)
need(doc.get("apiVersion") == "batch/v1" and doc.get("kind") == "CronJob", "not a batch/v1 CronJob")
need(doc["metadata"].get("name"), "no metadata.name")
spec = doc["spec"]
need(len(str(spec.get("schedule", "")).split()) == 5, "schedule is not five fields")
need(spec.get("concurrencyPolicy") in ("Forbid", "Replace", "Allow"), "bad concurrencyPolicy")
pod = spec["jobTemplate"]["spec"]["template"]["spec"]
need(pod.get("restartPolicy") in ("Never", "OnFailure"), "a Job's pods need restartPolicy Never or OnFailure")
c = pod["containers"][0]
need(c.get("name") and c.get("image"), "container without name or image")
cmd = c["command"]
need(isinstance(cmd, list) and cmd[0] == "/usr/bin/dlock", "command does not start with /usr/bin/dlock")
env = {e["name"]: e for e in c.get("env", [])}
ref = env.get("DLOCK_BACKEND", {}).get("valueFrom", {}).get("secretKeyRef", {})
need(ref.get("name") and ref.get("key"), "DLOCK_BACKEND is not taken from a Secret")
need("DLOCK_PASSWORD" not in env or "valueFrom" in env["DLOCK_PASSWORD"], "a literal password in the spec")
need("--password-file" in cmd, "no --password-file")
path = cmd[cmd.index("--password-file") + 1]
mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
vols = {v["name"]: v for v in pod.get("volumes", [])}
ok = any(path.startswith(mounts[n].rstrip("/") + "/") and "secret" in vols.get(n, {}) for n in mounts)
need(ok, "the password file is not on a volume from a Secret")
need(int(pod.get("terminationGracePeriodSeconds", 30)) > 5, "grace period not longer than --kill-after")
print(" ".join(shlex.quote(w) for w in cmd))
PY
check_command "kubernetes/cronjob.yaml command" "$(cat "$tmp/k8s")" report.sh 0

echo "PASS examples: systemd units verified, every command of the units, crontab and CronJob run"
