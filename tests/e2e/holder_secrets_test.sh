#!/usr/bin/env bash
# Holder records hold no secret (issue 34 point 2). status and list show a
# holder's command to anyone who can read the backend (here a 0644 lock
# file): `acquire` records its caller's command line, `run` its job's, and a
# cron line or a script's `sh -c` carries passwords in URLs, in PGPASSWORD=
# and DLOCK_PASSWORD= assignments and after --password. None of them may
# reach the record, status, status --json or list; the rest of the command
# stays readable.
SCENARIO="holder records hold no secret"
. "$(dirname "$0")/lib.sh"

secrets=(pg-Hunter2x dl-Hunter2x url-Hunter2x opt-Hunter2x tok-Hunter2x)
no_secret() { # WHAT TEXT
  local s
  for s in "${secrets[@]}"; do
    case $2 in *"$s"*) fail "$1 shows the secret $s: $2" ;; esac
  done
}

# acquire, called from a shell line that carries secrets (the "; true"
# keeps sh from exec'ing dlock, so sh is the caller).
line="PGPASSWORD=pg-Hunter2x DLOCK_PASSWORD=dl-Hunter2x \"\$1\" -b \"\$2\" acquire kept -t 1h >\"\$3\"; true redis://u:url-Hunter2x@db/ --password opt-Hunter2x API_TOKEN=tok-Hunter2x"
sh -c "$line" caller "$DLOCK_BIN" "$BACKEND" "$tmpdir/kept.token" </dev/null 2>"$tmpdir/acq.err" ||
  fail "acquire from sh -c failed: $(cat "$tmpdir/acq.err")"
keeper=$(json 'd["holder"]["pid"]' < <("${DL[@]}" status kept --json))
track "$keeper"

# run, whose job's arguments carry the same.
"${DL[@]}" run job -- sh -c 'echo $$ >"$1/job.pid.tmp"; mv "$1/job.pid.tmp" "$1/job.pid"; exec sleep 1000' \
  sh "$tmpdir" PGPASSWORD=pg-Hunter2x redis://:url-Hunter2x@db:6379 --password opt-Hunter2x \
  "DLOCK_PASSWORD=dl-Hunter2x" "API_TOKEN=tok-Hunter2x" </dev/null >/dev/null 2>"$tmpdir/run.err" &
track $!
wait_until test -s "$tmpdir/job.pid" || fail "the job did not start: $(cat "$tmpdir/run.err")"
slurp job_pid "$tmpdir/job.pid"
track "$job_pid"

for name in kept job; do
  text=$("${DL[@]}" status "$name") || fail "status $name exited $?"
  no_secret "status $name" "$text"
  doc=$("${DL[@]}" status "$name" --json)
  no_secret "status $name --json" "$doc"
  command=$(json 'd["holder"]["command"]' <<<"$doc")
  # What is not secret stays: the program and the assignments' names.
  case $command in *PGPASSWORD=*'***'*) ;; *) fail "status $name --json: the command lost its shape: $command" ;; esac
  case $command in *"redis://"*"@db"*) ;; *) fail "status $name --json: the URL lost its host: $command" ;; esac
  no_secret "lock file $name.lock" "$(cat "$LOCKDIR/dlock/$name.lock")"
done
case $("${DL[@]}" status job --json) in *sleep*|*"sh -c"*) ;; *) fail "the job's command is not shown at all" ;; esac
no_secret "list" "$("${DL[@]}" list)"
no_secret "list --json" "$("${DL[@]}" list --json)"

"${DL[@]}" release kept "$(cat "$tmpdir/kept.token")" || fail "release kept failed"
pass
