#pragma once

#include "backend/backend.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// The checks of `dlock doctor` for PostgreSQL (and ping's pooler warning).
namespace dlock::backend::postgres {

class PgConnection;

// postgres.pooler: two statements on one connection ran in different server
// sessions (pg_backend_pid() differs): a pooler in transaction mode, which
// session advisory locks do not survive. Two round trips, each within
// `timeout`.
Finding pooler_finding(PgConnection &connection, Millis timeout);

// One row of pg_settings: its value and unit ("ms", "s", or empty).
struct Setting {
  std::string value, unit;
};

// The settings that could end a session, or drop a silent client, sooner
// than T (`ttl`), as a plain session of this role and database gets them
// (postgresql.conf, ALTER SYSTEM, ALTER ROLE/DATABASE ... SET, the URL's
// options): postgres.idle_session_timeout,
// postgres.idle_in_transaction_session_timeout, postgres.tcp_keepalives,
// postgres.tcp_user_timeout. dlock turns each off (or sets it from T) in its
// own sessions, so a short one is a warning: psql sessions sharing dlock's
// keys, and anything that drops startup options, lose their locks.
std::vector<Finding> setting_findings(const std::map<std::string, Setting> &settings, Millis ttl);

// postgres.session-options: a session opened as dlock opens a lock's, by
// `open` (startup options: keepalives from T = `ttl`, timeouts off), gets
// those settings. A pooler refuses them (unsupported startup parameter) or,
// told to ignore them, drops them silently: then no lock can be taken, or
// the lock's session is not protected. Judged by tcp_keepalives_idle on a
// TCP session (a UNIX socket has none: ok, not checked).
Finding session_options_finding(const std::function<std::unique_ptr<PgConnection>()> &open, Millis ttl, Millis timeout);

// Every check, on a connection of its own without dlock's session options
// (`keywords`/`values` as for PgConnection, the URL and password).
std::vector<Finding> diagnose_server(const std::vector<std::string> &keywords, const std::vector<std::string> &values,
                                     const std::string &label, Millis ttl, Millis timeout);

} // namespace dlock::backend::postgres
