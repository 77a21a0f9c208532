#!/usr/bin/env bash
# rediss:// verifies the server: run, acquire and status work with ?cacert=;
# the system CAs or another CA are refused (69) with one line and nothing
# run; ?insecure=1 connects without a CA but warns. Run under
# scripts/with-redis --tls.
SCENARIO="redis over TLS verifies the server"
. "$(dirname "$0")/lib.sh"
use_redis

port=$DLOCK_TEST_REDIS_PORT
case $BACKEND in "rediss://127.0.0.1:$port?cacert="*) ;; *) fail "with-redis --tls gave the URL $BACKEND" ;; esac

# refused WHAT URL: run on URL fails with 69 (78 also accepted: the brief allows
# either for a certificate that does not verify) with one line, job not run.
refused() {
  local what=$1 url=$2
  rm -f "$tmpdir/ran"
  started=$(now_ms)
  capture "$DLOCK_BIN" -b "$url" run tls.lock -- touch "$tmpdir/ran"
  elapsed=$(($(now_ms) - started))
  case $rc in 69 | 78) ;; *) fail "$what: run exited $rc, expected 69; stderr: $err" ;; esac
  assert_one_line_message "$what" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran"
  [ "$elapsed" -lt 4000 ] || fail "$what: took ${elapsed} ms to give up"
}

# run and status through TLS with the right CA.
capture "${DL[@]}" run tls.lock -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run over rediss:// with ?cacert= exited $rc, expected 0; stderr: $err"
[[ $out =~ ^[0-9]+$ ]] || fail "the job saw DLOCK_FENCE='$out'"
[ -z "$err" ] || fail "run over verified TLS printed on stderr: $err"

capture "${DL[@]}" acquire tls.acq --ttl 30s
[ "$rc" = 0 ] || fail "acquire over rediss:// exited $rc; stderr: $err"
token=$out
[ "$("$RCLI" EXISTS "$(redis_key tls.acq lock)")" = 1 ] || fail "acquire over TLS did not create $(redis_key tls.acq lock) on the server"
capture "${DL[@]}" status tls.acq
[ "$rc" = 0 ] || fail "status over rediss:// of a held lock exited $rc; stderr: $err"
case $out in *"$token"*) fail "status prints the release token" ;; esac
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping over rediss:// exited $rc; stdout: $out; stderr: $err"
capture "${DL[@]}" release tls.acq "$token"
[ "$rc" = 0 ] || fail "release over rediss:// exited $rc; stderr: $err"
[ "$("$RCLI" EXISTS "$(redis_key tls.acq lock)")" = 0 ] || fail "release over TLS left the lock key behind"

# localhost is in the certificate too: the host name check passes.
capture "$DLOCK_BIN" -b "rediss://localhost:$port?cacert=$DLOCK_TEST_REDIS_CA" run tls.lock -- true
[ "$rc" = 0 ] || fail "rediss://localhost (a name in the certificate) exited $rc; stderr: $err"

# Another CA, made here: verification fails.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tmpdir/other.key" \
  -out "$tmpdir/other.crt" -days 1 -subj "/CN=some other CA" >/dev/null 2>&1 || fail "openssl could not make a second CA"
refused "a CA that did not sign the server's certificate" "rediss://127.0.0.1:$port?cacert=$tmpdir/other.crt"
# No cacert: the system CAs do not know the test CA either.
refused "the system CAs" "rediss://127.0.0.1:$port"
# Plain redis:// against the TLS port cannot talk to it.
refused "plain redis:// to a TLS port" "redis://127.0.0.1:$port"

# An unreadable CA file is a configuration error.
capture "$DLOCK_BIN" -b "rediss://127.0.0.1:$port?cacert=$tmpdir/no-such-ca.crt" run tls.lock -- touch "$tmpdir/ran"
[ "$rc" = 78 ] || fail "a missing cacert file: run exited $rc, expected 78; stderr: $err"
assert_one_line_message "a missing cacert file" "$err"
[ ! -e "$tmpdir/ran" ] || fail "a missing cacert file: the job ran"

# ?insecure=1 skips verification, and says so.
capture "$DLOCK_BIN" -b "rediss://127.0.0.1:$port?insecure=1" run tls.lock -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "rediss://...?insecure=1 exited $rc, expected 0; stderr: $err"
[[ $out =~ ^[0-9]+$ ]] || fail "the job with ?insecure=1 saw DLOCK_FENCE='$out'"
[ -n "$err" ] || fail "rediss://...?insecure=1 connected without printing a warning"
printf '%s\n' "$err" | grep -qiE 'insecure|verif' || fail "the ?insecure=1 warning does not say that verification is off: $err"
pass
