# shellcheck shell=bash
# Helpers of the `dlock doctor` scenarios (doctor_*_test.sh), after lib.sh
# and a use_X:
#
#   doctor [ARGS...]             run "${DL[@]}" doctor --json ARGS, set $rc,
#                                $out (the JSON document) and $err; fail if
#                                $out is not a document with the stable keys
#   expect_rc N WHAT             $rc is N
#   expect_check ID SEVERITY [TEXT]
#                                a check ID of the last document has
#                                SEVERITY (and TEXT in what it found), and a
#                                fix unless it is ok
#   expect_all_ok [EXCEPT_ID...] every check but EXCEPT_ID is ok, and the
#                                exit status is 0
#   expect_text_line ID SEVERITY the text output (dlock doctor, no --json,
#                                same ARGS as the last doctor) has the line
#                                "SEVERITY ID ..." with "fix:" unless ok

_doctor_args=()

doctor() {
  _doctor_args=("$@")
  capture "${DL[@]}" doctor --json "$@"
  printf '%s' "$out" | json 'sorted(d.keys()) == ["backend", "checks", "ttl_ms", "verdict"] and all(sorted(c.keys()) == ["fix", "found", "id", "severity"] for c in d["checks"])' |
    grep -qx true || fail "doctor --json $* (exit $rc) gave no document with backend, ttl_ms, checks (id, severity, found, fix) and verdict: $out; stderr: $err"
}

expect_rc() {
  [ "$rc" = "$1" ] || fail "doctor ${_doctor_args[*]}: $2: exit $rc, expected $1; stdout: $out; stderr: $err"
}

expect_check() {
  local id=$1 severity=$2 text=${3:-}
  printf '%s' "$out" | ID=$id SEV=$severity TEXT=$text json 'any(c["id"] == __import__("os").environ["ID"] and c["severity"] == __import__("os").environ["SEV"] and __import__("os").environ["TEXT"] in c["found"] and (c["severity"] == "ok" or c["fix"]) for c in d["checks"])' |
    grep -qx true || fail "doctor ${_doctor_args[*]}: no check $id with severity $severity${text:+ finding '$text'} (and a fix): $out"
}

expect_all_ok() {
  expect_rc 0 "all ok"
  printf '%s' "$out" | EXCEPT=" $* " json '[c["id"] + ": " + c["severity"] for c in d["checks"] if c["severity"] != "ok" and " " + c["id"] + " " not in __import__("os").environ["EXCEPT"]]' |
    grep -qx '\[\]' || fail "doctor ${_doctor_args[*]}: not every check is ok: $out"
}

expect_text_line() {
  local id=$1 severity=$2 text
  text=$("${DL[@]}" doctor "${_doctor_args[@]}" 2>&1)
  printf '%s\n' "$text" | grep -E "^$severity +$id " >"$tmpdir/.doctor.line" ||
    fail "doctor ${_doctor_args[*]} (text) has no line '$severity $id ...': $text"
  if [ "$severity" != ok ]; then
    grep -q '  fix: ' "$tmpdir/.doctor.line" || fail "the text line of $id says no 'fix:': $(cat "$tmpdir/.doctor.line")"
  fi
}
