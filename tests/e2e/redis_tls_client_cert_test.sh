#!/usr/bin/env bash
# A Redis server that requires client certificates: ?cert=&key= works, no
# certificate is refused with one line, a key file others can read is a
# configuration error (78), ?insecure=1 with a certificate warns and works.
# Run under scripts/with-redis --tls --client-cert.
SCENARIO="redis over TLS with a client certificate"
. "$(dirname "$0")/lib.sh"
use_redis

port=$DLOCK_TEST_REDIS_PORT
ca=$DLOCK_TEST_REDIS_CA
cert=$DLOCK_TEST_REDIS_CLIENT_CERT
key=$DLOCK_TEST_REDIS_CLIENT_KEY
[ -r "$cert" ] && [ -r "$key" ] || fail "with-redis --client-cert made no client certificate"
url="rediss://127.0.0.1:$port?cacert=$ca&cert=$cert&key=$key"

capture "$DLOCK_BIN" -b "$url" run cert.lock -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run with ?cacert=&cert=&key= exited $rc, expected 0; stderr: $err"
[[ $out =~ ^[0-9]+$ ]] || fail "the job saw DLOCK_FENCE='$out'"
[ -z "$err" ] || fail "run with a client certificate printed on stderr: $err"

capture "$DLOCK_BIN" -b "$url" acquire cert.acq --ttl 30s
[ "$rc" = 0 ] || fail "acquire with a client certificate exited $rc; stderr: $err"
token=$out
[ "$("$RCLI" EXISTS "$(redis_key cert.acq lock)")" = 1 ] || fail "acquire did not create $(redis_key cert.acq lock) on the server"
capture "$DLOCK_BIN" -b "$url" status cert.acq
[ "$rc" = 0 ] || fail "status with a client certificate exited $rc; stderr: $err"
capture "$DLOCK_BIN" -b "$url" release cert.acq "$token"
[ "$rc" = 0 ] || fail "release with a client certificate exited $rc; stderr: $err"

# Without a client certificate the server hangs up during the handshake.
capture "$DLOCK_BIN" -b "rediss://127.0.0.1:$port?cacert=$ca" run cert.lock -- touch "$tmpdir/ran"
case $rc in 69 | 77) ;; *) fail "no client certificate: run exited $rc, expected 69 (or 77); stderr: $err" ;; esac
assert_one_line_message "no client certificate" "$err"
[ ! -e "$tmpdir/ran" ] || fail "no client certificate: the job ran"

# The key file must not be readable by group or others.
cp "$key" "$tmpdir/open.key"
chmod 0644 "$tmpdir/open.key"
capture "$DLOCK_BIN" -b "rediss://127.0.0.1:$port?cacert=$ca&cert=$cert&key=$tmpdir/open.key" run cert.lock -- touch "$tmpdir/ran"
[ "$rc" = 78 ] || fail "a key file readable by others: run exited $rc, expected 78; stderr: $err"
assert_one_line_message "a key file readable by others" "$err"
[ ! -e "$tmpdir/ran" ] || fail "a key file readable by others: the job ran"

# A missing certificate file is a configuration error.
capture "$DLOCK_BIN" -b "rediss://127.0.0.1:$port?cacert=$ca&cert=$tmpdir/none.crt&key=$key" run cert.lock -- touch "$tmpdir/ran"
[ "$rc" = 78 ] || fail "a missing cert file: run exited $rc, expected 78; stderr: $err"
assert_one_line_message "a missing cert file" "$err"

# ?insecure=1 with the client certificate: works, warns.
capture "$DLOCK_BIN" -b "rediss://127.0.0.1:$port?insecure=1&cert=$cert&key=$key" run cert.lock -- true
[ "$rc" = 0 ] || fail "?insecure=1 with a client certificate exited $rc, expected 0; stderr: $err"
printf '%s\n' "$err" | grep -qiE 'insecure|verif' || fail "?insecure=1 printed no warning about verification: $err"
pass
