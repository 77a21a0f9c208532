#!/usr/bin/env bash
# The man page is generated from its source, renders without warnings, and
# documents every subcommand and option that `dlock --help` lists.
set -euo pipefail
: "${DLOCK_BIN:?}"
root=$(cd "$(dirname "$0")/../.." && pwd)
page="$root/man/dlock.1"
fail() { echo "FAIL man page: $*" >&2; exit 1; }

"$root/scripts/gen-man" --check >/dev/null || fail "man/dlock.1 is out of date with man/dlock.1.scd"
warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null || true)
[ -z "$warnings" ] || fail "man reports: $warnings"

text=$(MANWIDTH=200 man -l "$page" 2>/dev/null | col -b)
subcommands=$("$DLOCK_BIN" --help | sed -n '/^Subcommands:/,$p' | awk 'NR>1 && NF {print $1}')
[ -n "$subcommands" ] || fail "no subcommands found in dlock --help"
checked=0
for help_of in "" $subcommands; do
  options=$("$DLOCK_BIN" $help_of --help | grep -oE '(^|[ ,])--?[a-zA-Z][-a-zA-Z]*' | tr -d ' ,' | sort -u)
  for option in $options; do
    [ "$option" = "-h" ] || [ "$option" = "--help" ] && continue
    grep -qF -- "$option" <<<"$text" || fail "option $option of 'dlock $help_of' is not in the man page"
    checked=$((checked + 1))
  done
done
for command in $subcommands; do
  grep -qw -- "$command" <<<"$text" || fail "subcommand $command is not in the man page"
done
for code in 3 64 69 70 75 76 77 78 124 126 127; do
  grep -qw -- "$code" <<<"$text" || fail "exit status $code is not in the man page"
done
for variable in DLOCK_BACKEND DLOCK_NAMESPACE DLOCK_CONFIG DLOCK_PASSWORD DLOCK_TOKEN DLOCK_NAME DLOCK_FENCE; do
  grep -qw -- "$variable" <<<"$text" || fail "$variable is not in the man page"
done
echo "PASS man page: renders cleanly, $checked options, all subcommands, exit codes and variables documented"
