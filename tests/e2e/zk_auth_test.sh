#!/usr/bin/env bash
# ZooKeeper digest credentials: zk://alice:PASS@host, zk://alice@host with
# DLOCK_PASSWORD or --password-file are one identity, whose lock nodes are
# theirs to delete and readable by all: status and list without credentials
# see alice's lock, but release --force by bob, by alice with a wrong
# password or without credentials is refused (77, one line naming the
# permission) and leaves the lock alone; other locks in the namespace stay
# open to all. The password never shows in any output, in ps, in the job's
# environment or in the keeper's command line (when it came from
# DLOCK_PASSWORD).
SCENARIO="zookeeper: digest credentials and ACLs"
. "$(dirname "$0")/lib.sh"
use_zookeeper

secret=Zk-s3cret-Pw0rd
port=$DLOCK_TEST_ZK_PORT
alice=zk://alice@127.0.0.1:$port
alice_pw=zk://alice:$secret@127.0.0.1:$port
anonymous=zk://127.0.0.1:$port
all_output=$tmpdir/all-output
: >"$all_output"

# keep: remember what the last capture printed, for the final password check.
keep() { printf '%s\n%s\n' "$out" "$err" >>"$all_output"; }

# refused WHAT CMD...: CMD exits 77 with one line about permission.
refused() {
  local what=$1
  shift
  capture "$@"
  keep
  [ "$rc" = 77 ] || fail "$what: exit $rc, expected 77; stdout: $out; stderr: $err"
  assert_one_line_message "$what" "$err"
  printf '%s\n' "$err" | grep -qi 'permi' || fail "$what: the message does not mention permission: $err"
}

# The job records what ps shows of dlock (its parent) and of itself, and its
# environment. (Not all of ps: the test's own runner has the password on its
# command line.)
job=(sh -c 'ps -ww -o args= -p "$PPID" -p "$$" >"$1/ps.txt"; env >"$1/env.txt"; echo "$DLOCK_FENCE"' job "$tmpdir")

# The password in the URL: redacted from ps and from the job's DLOCK_BACKEND.
capture "$DLOCK_BIN" -b "$alice_pw" run auth.run -- "${job[@]}"
keep
[ "$rc" = 0 ] || fail "run as alice with the password in the URL exited $rc, expected 0; stderr: $err"
[[ $out =~ ^[0-9]+$ ]] || fail "the job saw DLOCK_FENCE='$out'"
grep -q "127.0.0.1:$port" "$tmpdir/ps.txt" || fail "the job's ps listing does not show dlock's URL (is ps working?): $(cat "$tmpdir/ps.txt")"
backend_env=$(grep '^DLOCK_BACKEND=' "$tmpdir/env.txt")
case $backend_env in *"$secret"*) fail "the job's DLOCK_BACKEND holds the password: $backend_env" ;; esac
case $backend_env in *"127.0.0.1:$port"*) ;; *) fail "the job's DLOCK_BACKEND does not name the server: $backend_env" ;; esac

# DLOCK_PASSWORD and --password-file: never in ps.
capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$alice" run auth.run -- "${job[@]}"
keep
[ "$rc" = 0 ] || fail "run as alice with DLOCK_PASSWORD exited $rc, expected 0; stderr: $err"
grep -F -- "$secret" "$tmpdir/ps.txt" && fail "the password shows in ps while dlock runs (DLOCK_PASSWORD)"
grep '^DLOCK_BACKEND=' "$tmpdir/env.txt" | grep -qF -- "$secret" && fail "the job's DLOCK_BACKEND holds the password"
printf '%s\n' "$secret" >"$tmpdir/pw"
chmod 0600 "$tmpdir/pw"
capture "$DLOCK_BIN" -b "$alice" --password-file "$tmpdir/pw" run auth.run -- "${job[@]}"
keep
[ "$rc" = 0 ] || fail "run as alice with --password-file exited $rc, expected 0; stderr: $err"
grep -F -- "$secret" "$tmpdir/ps.txt" && fail "the password shows in ps while dlock runs (--password-file)"

# alice takes a lock (with DLOCK_PASSWORD); its keeper's command line does
# not hold the password.
capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$alice" acquire auth.lock --ttl 30s
keep
[ "$rc" = 0 ] || fail "acquire as alice exited $rc; stderr: $err"
token=$out
keeper=$("${DL[@]}" status auth.lock --json | json 'd["holder"]["pid"]')
track "$keeper"
tr '\0' ' ' <"/proc/$keeper/cmdline" | grep -qF -- "$secret" && fail "the keeper's command line holds the password: $(tr '\0' ' ' <"/proc/$keeper/cmdline")"
fence=$("${DL[@]}" status auth.lock --json | json 'd["fence"]')

# Without credentials, the lock is visible.
capture "$DLOCK_BIN" -b "$anonymous" status auth.lock
keep
[ "$rc" = 0 ] || fail "status without credentials of alice's lock exited $rc, expected 0; stderr: $err"
case $out in *"$keeper"*) ;; *) fail "status without credentials does not show the holder (pid $keeper): $out" ;; esac
capture "$DLOCK_BIN" -b "$anonymous" list --json
keep
[ "$rc" = 0 ] || fail "list without credentials exited $rc; stderr: $err"
[ "$(printf '%s' "$out" | json '[x["name"] for x in d]')" = '["auth.lock"]' ] || fail "list without credentials does not show alice's lock: $out"
capture "$DLOCK_BIN" -b "zk://bob:other-pw@127.0.0.1:$port" status auth.lock --json
keep
[ "$rc" = 0 ] || fail "status as bob exited $rc; stderr: $err"

# The lock node is readable by all: a caller's command line that carries
# the password (a cron line, a script's sh -c) must not reach its holder
# record (issue 34 point 2; the record used to show the whole URL).
sh -c '"$1" -b "$2" acquire auth.cron --ttl 30s >"$3"; true' caller "$DLOCK_BIN" "$alice_pw" "$tmpdir/cron.token" ||
  fail "acquire from sh -c with the password in the URL failed"
cron_keeper=$("${DL[@]}" status auth.cron --json | json 'd["holder"]["pid"]')
track "$cron_keeper"
capture "$DLOCK_BIN" -b "$anonymous" status auth.cron --json
keep
[ "$rc" = 0 ] || fail "status without credentials of the cron line's lock exited $rc; stderr: $err"
case $(json 'd["holder"]["command"]' <<<"$out") in *"127.0.0.1:$port"*) ;; *) fail "the holder record does not show the caller's command: $out" ;; esac
for node in $("$ZKCLI" ls /dlock/auth.cron 2>/dev/null | tr -d '[],"'); do
  printf '%s\n' "$("$ZKCLI" get "/dlock/auth.cron/$node")" >>"$all_output"
done
capture "$DLOCK_BIN" -b "$alice_pw" release auth.cron "$(cat "$tmpdir/cron.token")"
keep
[ "$rc" = 0 ] || fail "release of the cron line's lock exited $rc; stderr: $err"

# Nobody else may break it.
refused "release --force as bob" "$DLOCK_BIN" -b "zk://bob:other-pw@127.0.0.1:$port" release auth.lock --force
refused "release --force without credentials" "$DLOCK_BIN" -b "$anonymous" release auth.lock --force
refused "release --force as alice with a wrong password" \
  env DLOCK_PASSWORD=Wr0ng-Passw0rd "$DLOCK_BIN" -b "$alice" release auth.lock --force
case $err in *Wr0ng-Passw0rd*) fail "the message shows the wrong password: $err" ;; esac
refused "release --force as alice with a wrong password in the URL" \
  "$DLOCK_BIN" -b "zk://alice:Wr0ng-Passw0rd@127.0.0.1:$port" release auth.lock --force
case $err in *Wr0ng-Passw0rd*) fail "the message shows the URL's password: $err" ;; esac
is_held auth.lock || fail "alice's lock is free after the refused release --force attempts"

# alice's credentials restrict her locks, not the namespace: others still
# take locks of their own in it.
capture "$DLOCK_BIN" -b "zk://bob:other-pw@127.0.0.1:$port" run auth.bob -- true
keep
[ "$rc" = 0 ] || fail "bob's run of another lock in alice's namespace exited $rc; stderr: $err"
capture "$DLOCK_BIN" -b "$anonymous" run auth.anyone -- true
keep
[ "$rc" = 0 ] || fail "a run without credentials of another lock in alice's namespace exited $rc; stderr: $err"
[ "$("${DL[@]}" status auth.lock --json | json 'd["fence"]')" = "$fence" ] || fail "alice's lock changed hands after the refused attempts"
is_alive "$keeper" || fail "alice's keeper ended after the refused attempts"

# The three ways of giving alice's password are one identity: her lock is
# hers to renew and release whichever she uses.
capture "$DLOCK_BIN" -b "$alice_pw" renew auth.lock "$token" --ttl 30s
keep
[ "$rc" = 0 ] || fail "renew as alice with DLOCK_PASSWORD exited $rc; stderr: $err"
capture "$DLOCK_BIN" -b "$alice" --password-file "$tmpdir/pw" release auth.lock "$token"
keep
[ "$rc" = 0 ] || fail "release as alice with --password-file exited $rc; stderr: $err"
is_free auth.lock || fail "alice's lock is held after her release"
wait_until -t 2 is_gone "$keeper" || fail "alice's keeper outlived the release"

# alice may break a lock she holds (with another client of hers).
DL=("$DLOCK_BIN" -b "$alice_pw")
start_holder h auth.lock --ttl 30s
DL=("$DLOCK_BIN" -b "$BACKEND")
capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$alice" release auth.lock --force
keep
[ "$rc" = 0 ] || fail "release --force by alice of her own lock exited $rc; stderr: $err"
wait_exit "$HOLDER_PID" 10
[ "$rc" = 76 ] || fail "the run whose lock alice broke exited $rc, expected 76; stderr: $(cat "$tmpdir/h.err")"
cat "$tmpdir/h.err" >>"$all_output"

# An unreadable password file is a configuration error.
capture "$DLOCK_BIN" -b "$alice" --password-file "$tmpdir/no-such-file" run auth.run -- touch "$tmpdir/ran"
keep
[ "$rc" = 78 ] || fail "--password-file of a missing file: exit $rc, expected 78; stderr: $err"
assert_one_line_message "--password-file of a missing file" "$err"
[ ! -e "$tmpdir/ran" ] || fail "the job ran without its password file"

# -v output and ping are also free of the password.
capture "$DLOCK_BIN" -b "$alice_pw" -v -v run auth.run -- true
keep
[ "$rc" = 0 ] || fail "run -v -v as alice exited $rc; stderr: $err"
capture "$DLOCK_BIN" -b "$alice_pw" ping --json
keep
[ "$rc" = 0 ] || fail "ping as alice exited $rc; stderr: $err"

if grep -nF -- "$secret" "$all_output" >"$tmpdir/leaks"; then
  fail "the password appears in dlock's output: $(head -3 "$tmpdir/leaks")"
fi
pass
