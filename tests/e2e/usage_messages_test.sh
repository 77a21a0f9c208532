#!/usr/bin/env bash
# Usage errors name the wrong word first, with the nearest real name when it
# looks like a typo, on one line, exit 64; every subcommand's --help has a
# real usage line and lists the global options too.
SCENARIO="usage messages"
. "$(dirname "$0")/lib.sh"

# says WHAT EXPECTED CMD...: CMD exits 64, prints nothing on stdout and
# exactly the line EXPECTED on stderr.
says() {
  local what=$1 expected=$2
  shift 2
  capture "$@"
  [ "$rc" = 64 ] || fail "$what: exit $rc, expected 64; stderr: $err"
  assert_one_line_message "$what" "$err"
  [ "$err" = "$expected" ] || fail "$what: said '$err', expected '$expected'"
  [ -z "$out" ] || fail "$what: printed on stdout: $out"
}

says "run x --wiat 5s -- true" "dlock: unknown option --wiat for run (did you mean --wait?)" \
  "${DL[@]}" run x --wiat 5s -- true
says "run x --wiat=5s true" "dlock: unknown option --wiat for run (did you mean --wait?)" \
  "${DL[@]}" run x --wiat=5s true
says "rnu x -- true" "dlock: unknown command 'rnu' (did you mean 'run'?)" "${DL[@]}" rnu x -- true
says "stauts x" "dlock: unknown command 'stauts' (did you mean 'status'?)" "${DL[@]}" stauts x
says "status x --jsno" "dlock: unknown option --jsno for status (did you mean --json?)" "${DL[@]}" status x --jsno
says "--bakend URL status x" "dlock: unknown option --bakend (did you mean --backend?)" "${DL[@]}" --bakend file: status x
says "run x --max-runtme 1s true" "dlock: unknown option --max-runtme for run (did you mean --max-runtime?)" \
  "${DL[@]}" run x --max-runtme 1s true
says "release x --froce" "dlock: unknown option --froce for release (did you mean --force?)" "${DL[@]}" release x --froce
# No near name: the message lists the commands, or points at --help.
capture "${DL[@]}" frobnicate x
[ "$rc" = 64 ] || fail "frobnicate x: exit $rc, expected 64"
assert_one_line_message "frobnicate x" "$err"
case $err in "dlock: unknown command 'frobnicate' (commands: run, acquire, "*) ;; *) fail "frobnicate x: $err" ;; esac
says "run --frobnicate x true" "dlock: unknown option --frobnicate for run (see dlock run --help)" \
  "${DL[@]}" run --frobnicate x true
# Positionals and values.
says "run (no NAME)" "dlock: missing NAME for run (usage: dlock run [OPTIONS] NAME [--] COMMAND [ARG...])" "${DL[@]}" run
says "status x y" "dlock: unexpected argument 'y' for status (usage: dlock status [OPTIONS] NAME)" "${DL[@]}" status x y
says "run x -t" "dlock: option -t for run needs a value (D)" "${DL[@]}" run x -t
says "acquire x --wait" "dlock: option --wait for acquire needs a value (D)" "${DL[@]}" acquire x --wait

# --help of every subcommand: a usage line that starts with "dlock", the
# global options, exit 0.
declare -A usage=(
  [run]="Usage: dlock run [OPTIONS] NAME [--] COMMAND [ARG...]
   or: dlock run [OPTIONS] NAME -c 'SHELL COMMAND'"
  [acquire]="Usage: dlock acquire [OPTIONS] NAME"
  [renew]="Usage: dlock renew [OPTIONS] NAME [TOKEN]"
  [release]="Usage: dlock release [OPTIONS] NAME [TOKEN]
   or: dlock release [OPTIONS] NAME --force"
  [status]="Usage: dlock status [OPTIONS] NAME"
  [list]="Usage: dlock list [OPTIONS] [PREFIX]"
  [ping]="Usage: dlock ping [OPTIONS]"
  [doctor]="Usage: dlock doctor [OPTIONS]"
  [config]="Usage: dlock config [OPTIONS]"
  [version]="Usage: dlock version [OPTIONS]"
)
subcommands=$("$DLOCK_BIN" --help | awk '/^Subcommands:/ { on = 1; next } on && /^[^ ]/ { on = 0 } on && NF { print $1 }')
[ "$(printf '%s\n' $subcommands | wc -l)" -ge 8 ] || fail "could not find the subcommands in dlock --help: $subcommands"
for sub in $subcommands; do
  [ -n "${usage[$sub]:-}" ] || fail "this test does not know the usage of '$sub'"
  capture "$DLOCK_BIN" "$sub" --help
  [ "$rc" = 0 ] || fail "dlock $sub --help: exit $rc"
  lines=$(printf '%s\n' "${usage[$sub]}" | wc -l)
  got=$(printf '%s\n' "$out" | grep -A$((lines - 1)) -m1 '^Usage:')
  [ "$got" = "${usage[$sub]}" ] || fail "dlock $sub --help: usage is '$got', expected '${usage[$sub]}'"
  globals=$(printf '%s\n' "$out" | awk '/^Global options/ { on = 1; next } /^[^ ]/ { on = 0 } on')
  for option in -b,--backend --namespace --config --password-file --connect-timeout -q,--quiet -v,--verbose; do
    grep -q -- "^  $option\b" <<<"$globals" || fail "dlock $sub --help does not list the global option $option: $out"
  done
  # The subcommand's own help, not dlock's, and the same after NAME.
  case $out in *"Subcommands:"*) fail "dlock $sub --help printed dlock's help" ;; esac
done
capture "${DL[@]}" run x --help
case $out in "Run a command"*"Usage: dlock run [OPTIONS] NAME [--] COMMAND [ARG...]"*) ;; *) fail "dlock run x --help: $out" ;; esac
case $out in *"first word that is not an option"*) ;; *) fail "dlock run --help does not say where COMMAND starts: $out" ;; esac
capture "$DLOCK_BIN" --help
case $out in *"Usage: dlock [OPTIONS] SUBCOMMAND"*) ;; *) fail "dlock --help: usage line: $out" ;; esac

pass
