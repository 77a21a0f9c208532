#pragma once

#include "core/duration.hpp"

#include <chrono>
#include <optional>
#include <string>

// How dlock sets up the server session that holds a lock, as pure
// functions: its TCP keepalives, which bound the lease T, and the settings
// that could end the session, or a statement of dlock's, before T.
namespace dlock::backend::postgres {

// TCP keepalive settings of one end of a connection: probes after `idle`
// seconds of silence, `count` of them `interval` seconds apart, and
// `user_timeout` for data sent but not acknowledged.
struct Keepalive {
  long idle = 0, interval = 0, count = 0;
  Millis user_timeout{};
};

// Keepalives (whole seconds) that give up on a vanished peer after about
// `ttl` of silence, never sooner: the client stops its job before its own
// deadline, and only then may the server free the lock. T rounded up to
// whole seconds (at least 2): 3 probes T/6 apart, the first after the rest.
Keepalive keepalive_for(Millis ttl);

// The startup options (-c ...) of a lock's session: the server's end of
// `keepalive`, and the settings that could end the session or cancel a
// statement of dlock's sooner, turned off. The client's options take
// precedence over ALTER ROLE, ALTER DATABASE and postgresql.conf. Only
// settings that every supported server (12 on) knows: an unknown one
// refuses the connection.
std::string startup_options(const Keepalive &keepalive);

// The newer settings of that kind, for a server of `server_version`
// (PQserverVersion), as extra columns ", set_config(...)" of the session's
// first statement: idle_session_timeout (14 on) ends a session idle between
// two renewals; transaction_timeout (17 on) one whose statement (a wait in
// pg_advisory_lock) runs longer.
std::string session_settings(int server_version);

// The T that a renewal sent at `sent` for `ttl` must set the server's
// keepalives to, or nullopt if they already fit. `server_ttl` is the T they
// give now (0: unknown, after a change that went unanswered), and
// `promised_until` the latest t0 + T promised to the caller. The server
// frees the lock of a silent client T after the last thing it heard, so a
// renewal for `ttl` needs at least `ttl`; and while an earlier, longer
// promise (a lowered --ttl) still runs, at least what is left of it, since
// the answer to this renewal may never come and the caller then still
// counts on the old promise. A lowered T is set once that promise is past.
std::optional<Millis> server_ttl_for(Millis server_ttl, std::chrono::steady_clock::time_point promised_until,
                                     Millis ttl, std::chrono::steady_clock::time_point sent);

} // namespace dlock::backend::postgres
