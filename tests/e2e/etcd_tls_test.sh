#!/usr/bin/env bash
# etcds:// verifies the server: with ?cacert= of the CA that signed its
# certificate, run, a waiter's watch, acquire, status, release and ping work
# (127.0.0.1 and localhost are both in the certificate), also with a client
# certificate (?cert=&key=) the server does not ask for. The system CAs or
# another CA are refused (69) with one line and nothing run; so is plain
# etcd:// against the TLS port. A cacert, cert or key file that does not
# exist is a configuration error (78). Run under scripts/with-etcd --tls.
SCENARIO="etcd: TLS verifies the server"
. "$(dirname "$0")/lib.sh"
use_etcd

[ -n "${DLOCK_TEST_ETCD_CACERT:-}" ] || fail "run this test under scripts/with-etcd --tls"
port=$DLOCK_TEST_ETCD_PORT
ca=$DLOCK_TEST_ETCD_CACERT
[ "$BACKEND" = "etcds://127.0.0.1:$port?cacert=$ca" ] || fail "use_etcd under --tls gave the URL $BACKEND"

# refused WHAT URL: run on URL exits 69 with one line, its job not run, soon.
refused() {
  local what=$1 url=$2 started elapsed
  rm -f "$tmpdir/ran"
  started=$(now_ms)
  capture "$DLOCK_BIN" -b "$url" run tls.lock -- touch "$tmpdir/ran"
  elapsed=$(($(now_ms) - started))
  [ "$rc" = 69 ] || fail "$what: run exited $rc, expected 69; stderr: $err"
  assert_one_line_message "$what" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran"
  [ "$elapsed" -lt 3000 ] || fail "$what: took ${elapsed} ms to give up"
}

# misconfigured WHAT URL: run on URL exits 78 with one line, its job not run.
misconfigured() {
  rm -f "$tmpdir/ran"
  capture "$DLOCK_BIN" -b "$2" run tls.lock -- touch "$tmpdir/ran"
  [ "$rc" = 78 ] || fail "$1: run exited $rc, expected 78; stderr: $err"
  assert_one_line_message "$1" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "$1: the job ran"
}

capture "${DL[@]}" run tls.lock -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run over etcds:// with ?cacert= exited $rc, expected 0; stderr: $err"
[[ $out =~ ^[0-9]+$ ]] || fail "the job saw DLOCK_FENCE='$out'"
[ -z "$err" ] || fail "run over verified TLS printed on stderr: $err"

# A holder and a waiter handed the lock by its watch, over TLS.
start_holder h tls.held --ttl 10s
holder_fence=$(cat "$tmpdir/h.fence")
"${DL[@]}" run tls.held --wait 10s -- sh -c 'echo "$DLOCK_FENCE" >"$1"' sh "$tmpdir/got" </dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter tls.held || fail "the waiter never queued; stderr: $(cat "$tmpdir/waiter.err")"
release_holder h
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the holder exited $rc; stderr: $(cat "$tmpdir/h.err")"
wait_exit "$waiter" 5
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(cat "$tmpdir/got")" -gt "$holder_fence" ] || fail "the waiter's fence $(cat "$tmpdir/got") is not greater than the holder's $holder_fence"

capture "${DL[@]}" acquire tls.acq --ttl 30s
[ "$rc" = 0 ] || fail "acquire over etcds:// exited $rc; stderr: $err"
token=$out
[ "$(etcd_key_count tls.acq)" = 1 ] || fail "acquire over TLS did not put a key under dlock/tls.acq/"
capture "${DL[@]}" status tls.acq
[ "$rc" = 0 ] || fail "status over etcds:// of a held lock exited $rc; stderr: $err"
case $out in *"$token"*) fail "status prints the release token" ;; esac
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping over etcds:// exited $rc; stdout: $out; stderr: $err"
printf '%s\n' "$out" | grep -q "https://127.0.0.1:$port" || fail "ping does not show the https endpoint: $out"
capture "${DL[@]}" release tls.acq "$token"
[ "$rc" = 0 ] || fail "release over etcds:// exited $rc; stderr: $err"
[ "$(etcd_key_count tls.acq)" = 0 ] || fail "release over TLS left the lock key behind"

# localhost is in the certificate too; a client certificate the server
# does not ask for does no harm.
capture "$DLOCK_BIN" -b "etcds://localhost:$port?cacert=$ca" run tls.lock -- true
[ "$rc" = 0 ] || fail "etcds://localhost (a name in the certificate) exited $rc; stderr: $err"
capture "$DLOCK_BIN" -b "etcds://127.0.0.1:$port?cacert=$ca&cert=$DLOCK_TEST_ETCD_CERT&key=$DLOCK_TEST_ETCD_KEY" run tls.lock -- true
[ "$rc" = 0 ] || fail "etcds:// with a client certificate exited $rc; stderr: $err"

# No cacert: the system CAs do not know the test CA.
refused "no cacert (the system CAs)" "etcds://127.0.0.1:$port"
printf '%s\n' "$err" | grep -qiE 'certificate|ssl|tls|verif' || fail "the refusal does not say the certificate did not verify: $err"
# Another CA, made here: verification fails.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tmpdir/other.key" \
  -out "$tmpdir/other.crt" -days 1 -subj "/CN=some other CA" >/dev/null 2>&1 || fail "openssl could not make a second CA"
refused "a CA that did not sign the server's certificate" "etcds://127.0.0.1:$port?cacert=$tmpdir/other.crt"
# Plain etcd:// against the TLS port cannot talk to it.
refused "plain etcd:// to a TLS port" "etcd://127.0.0.1:$port"

# Files that do not exist: configuration errors.
misconfigured "a cacert file that does not exist" "etcds://127.0.0.1:$port?cacert=$tmpdir/no-such-ca.crt"
misconfigured "cert and key files that do not exist" \
  "etcds://127.0.0.1:$port?cacert=$ca&cert=$tmpdir/no-such.crt&key=$tmpdir/no-such.key"
misconfigured "a cert without a key" "etcds://127.0.0.1:$port?cacert=$ca&cert=$DLOCK_TEST_ETCD_CERT"
pass
