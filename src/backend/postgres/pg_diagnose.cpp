#include "backend/postgres/pg_diagnose.hpp"

#include "backend/postgres/pg_connection.hpp"
#include "backend/postgres/pg_session.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dlock::backend::postgres {

namespace {

std::optional<long long> number(const std::string &text) {
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A pg_settings value in milliseconds, by its unit; nullopt: not a number.
std::optional<Millis> as_millis(const Setting &setting) {
  auto value = number(setting.value);
  if (!value || *value < 0 || *value > (1LL << 40)) return std::nullopt;
  if (setting.unit == "s") return Millis(*value * 1000);
  if (setting.unit == "min") return Millis(*value * 60'000);
  return Millis(*value);
}

std::string first_value(const Rows &rows) {
  return rows.ok() && rows.rows.size() == 1 && !rows.rows[0].empty() && rows.rows[0][0] ? *rows.rows[0][0] : "";
}

Finding timeout_finding(const std::map<std::string, Setting> &settings, const std::string &name, Millis ttl,
                        const char *what) {
  Finding f{"postgres." + name, Severity::ok, "", ""};
  auto found = settings.find(name);
  std::optional<Millis> value = found == settings.end() ? std::nullopt : as_millis(found->second);
  if (!value) {
    f.found = found == settings.end() ? name + " is not a setting of this server" : name + " cannot be read";
    return f;
  }
  if (value->count() == 0 || *value >= ttl) {
    f.found = fmt::format("{} = {}", name, value->count() == 0 ? "0 (off)" : format_duration(*value));
    return f;
  }
  f.severity = Severity::warning;
  f.found = fmt::format("{} = {}, shorter than T = {}: it ends {}; dlock turns it off in its own sessions, but "
                        "psql or other clients holding dlock's keys lose them",
                        name, format_duration(*value), format_duration(ttl), what);
  f.fix = fmt::format("ALTER ROLE ... RESET {} (or ALTER DATABASE ... RESET, or in postgresql.conf), or set it "
                      "above the longest --ttl",
                      name);
  return f;
}

} // namespace

Finding pooler_finding(PgConnection &connection, Millis timeout) {
  Rows first = connection.query("SELECT pg_backend_pid()", {}, SteadyClock::now() + timeout);
  Rows second = connection.query("SELECT pg_backend_pid()", {}, SteadyClock::now() + timeout);
  Finding f{"postgres.pooler", Severity::ok, "", ""};
  if (!first.ok() || !second.ok()) {
    f.severity = Severity::warning;
    f.found = "pg_backend_pid() failed: " + (first.ok() ? second.error : first.error);
    return f;
  }
  if (first.rows == second.rows) {
    f.found = "consecutive statements ran in one server session (no transaction-mode pooler seen)";
    return f;
  }
  // A pooler in transaction mode hands each transaction to whichever
  // server session is free: a session lock stays with a session this
  // client no longer talks to, and its release goes elsewhere.
  f.severity = Severity::unsafe;
  f.found = "consecutive statements ran in different server sessions: a connection pooler in transaction mode? "
            "Session advisory locks do not work through it";
  f.fix = "connect dlock to PostgreSQL itself, or to a pooler in session mode (pgbouncer: pool_mode = session)";
  return f;
}

std::vector<Finding> setting_findings(const std::map<std::string, Setting> &settings, Millis ttl) {
  std::vector<Finding> out{
      timeout_finding(settings, "idle_session_timeout", ttl, "a lock's session idle between two renewals"),
      timeout_finding(settings, "idle_in_transaction_session_timeout", ttl, "a session idle in a transaction")};
  Finding keepalive{"postgres.tcp_keepalives", Severity::ok, "", ""};
  auto get = [&](const char *name) -> std::optional<long long> {
    auto found = settings.find(name);
    return found == settings.end() ? std::nullopt : number(found->second.value);
  };
  auto idle = get("tcp_keepalives_idle"), interval = get("tcp_keepalives_interval"),
       count = get("tcp_keepalives_count");
  if (idle && interval && count && *idle > 0 && *interval > 0 && *count > 0 &&
      Millis((*idle + *interval * *count) * 1000) < ttl) {
    Millis total((*idle + *interval * *count) * 1000);
    keepalive.severity = Severity::warning;
    keepalive.found = fmt::format("tcp_keepalives_idle/interval/count = {}/{}/{}: the server drops a silent client "
                                  "after {}, sooner than T = {}; dlock sets them from T in its own sessions, but "
                                  "other clients holding dlock's keys lose them early",
                                  *idle, *interval, *count, format_duration(total), format_duration(ttl));
    keepalive.fix = "raise tcp_keepalives_idle (or reset these to 0, the system's defaults)";
  } else {
    keepalive.found = fmt::format("tcp_keepalives_idle/interval/count = {}/{}/{} (0: the system's)", idle.value_or(0),
                                  interval.value_or(0), count.value_or(0));
  }
  out.push_back(keepalive);
  Finding user = timeout_finding(settings, "tcp_user_timeout", ttl, "a connection whose data goes unacknowledged");
  out.push_back(user);
  return out;
}

Finding session_options_finding(const std::function<std::unique_ptr<PgConnection>()> &open, Millis ttl,
                                Millis timeout) {
  Finding f{"postgres.session-options", Severity::ok, "", ""};
  std::unique_ptr<PgConnection> connection;
  try {
    connection = open();
  } catch (const Error &refused) {
    if (refused.code() == ExitCode::auth) throw;
    f.severity = Severity::unsafe;
    f.found =
        fmt::format("a session opened as dlock opens a lock's (with startup options) is refused: {}", refused.what());
    f.fix = "connect dlock to PostgreSQL itself; a pooler must pass startup options through (pgbouncer does not)";
    return f;
  }
  Rows rows = connection->query("SELECT current_setting('tcp_keepalives_idle'), inet_server_addr() IS NULL", {},
                                SteadyClock::now() + timeout);
  std::string idle =
      rows.ok() && rows.rows.size() == 1 && rows.rows[0].size() == 2 && rows.rows[0][0] ? *rows.rows[0][0] : "";
  bool unix_socket =
      rows.ok() && rows.rows.size() == 1 && rows.rows[0].size() == 2 && rows.rows[0][1] && *rows.rows[0][1] == "t";
  std::string expected = std::to_string(keepalive_for(ttl).idle);
  if (unix_socket) {
    f.found = "a UNIX socket: dlock's session options are not checked (it has no keepalives to compare)";
  } else if (idle == expected) {
    f.found = fmt::format("dlock's session options reach the server (tcp_keepalives_idle = {} for T = {})", idle,
                          format_duration(ttl));
  } else {
    f.severity = Severity::unsafe;
    f.found = fmt::format("dlock's session options do not reach the server (tcp_keepalives_idle = {}, dlock set {}): "
                          "a pooler that ignores them (pgbouncer's ignore_startup_parameters = options)? A lock's "
                          "session then has neither its keepalives nor its timeouts turned off",
                          idle.empty() ? "unknown" : idle, expected);
    f.fix = "connect dlock to PostgreSQL itself";
  }
  return f;
}

std::vector<Finding> diagnose_server(const std::vector<std::string> &keywords, const std::vector<std::string> &values,
                                     const std::string &label, Millis ttl, Millis timeout) {
  PgConnection connection(keywords, values, SteadyClock::now() + timeout, label);
  std::vector<Finding> out{pooler_finding(connection, timeout)};
  Finding standby{"postgres.standby", Severity::ok, "", ""};
  std::string recovery = first_value(connection.query("SELECT pg_is_in_recovery()", {}, SteadyClock::now() + timeout));
  if (recovery == "t") {
    standby.severity = Severity::unsafe;
    standby.found = "a hot standby (pg_is_in_recovery()): its advisory locks are its own, unseen by the primary and "
                    "by other standbys, so clients of another server take the same lock";
    standby.fix = "point dlock at the primary (libpq: target_session_attrs=read-write with every host in the URL)";
  } else {
    standby.found = recovery == "f" ? "the primary (not in recovery)" : "pg_is_in_recovery() cannot be read";
  }
  out.push_back(standby);
  Rows rows = connection.query("SELECT name, setting, coalesce(unit, '') FROM pg_settings WHERE name IN "
                               "('idle_session_timeout', 'idle_in_transaction_session_timeout', "
                               "'tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', "
                               "'tcp_user_timeout')",
                               {}, SteadyClock::now() + timeout);
  std::map<std::string, Setting> settings;
  if (rows.ok())
    for (const auto &row : rows.rows)
      if (row.size() == 3 && row[0] && row[1] && row[2]) settings[*row[0]] = Setting{*row[1], *row[2]};
  for (Finding &finding : setting_findings(settings, ttl))
    out.push_back(std::move(finding));
  return out;
}

} // namespace dlock::backend::postgres
