#include "backend/postgres/pg_backend.hpp"

#include "backend/postgres/pg_connection.hpp"
#include "backend/postgres/pg_session.hpp"
#include "core/error.hpp"
#include "core/holder_json.hpp"
#include "core/log.hpp"
#include "core/sha256.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace dlock::backend::postgres {

namespace {

// The key is computed here and sent as a number: a fresh server session
// would spend most of a millisecond looking up the functions of the SQL
// that psql users are given (advisory_key in the header).
constexpr const char *k_key = "$1::bigint";

// pg_locks shows an advisory lock on one bigint as classid (high 32 bits),
// objid (low 32 bits) and objsubid 1, in the current database.
std::string lock_rows_where() {
  return fmt::format("l.locktype = 'advisory' AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE "
                     "datname = current_database()) AND l.classid::bigint = ({0} >> 32) & 4294967295 AND "
                     "l.objid::bigint = {0} & 4294967295",
                     k_key);
}

// The holder's note travels as a comment in the SQL the lock's session
// runs, so that others read it in pg_stat_activity.query. Comments nest in
// PostgreSQL: neither "/*" nor "*/" may appear inside.
std::string note_comment(const nlohmann::json &note) {
  std::string text = note.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (std::size_t at = 0; (at = text.find("/*", at)) != std::string::npos;)
    text.replace(at, 2, "/ *");
  for (std::size_t at = 0; (at = text.find("*/", at)) != std::string::npos;)
    text.replace(at, 2, "* /");
  return " /* dlock " + text + " */";
}

class PostgresBackend : public TakingBackend {
public:
  explicit PostgresBackend(const BackendConfig &config) : m_config(config), m_label(config.url.redacted()) {}

  RenewResult renew(const Lease &lease, Millis ttl, std::optional<SteadyClock::time_point> answer_by) override {
    RenewResult result;
    auto held = m_held.find(lease.token);
    if (held == m_held.end()) {
      result.outcome = RenewOutcome::lost;
      result.reason = "this process holds no lock with that token";
      return result;
    }
    Held &node = held->second;
    // 0: the lock's own length (from acquire or the last renewal with one).
    if (ttl > Millis(0)) node.length = ttl;
    ttl = node.length;
    auto sent = SteadyClock::now();
    auto by = sent + m_config.connect_timeout;
    if (answer_by) by = std::min(by, *answer_by);
    std::optional<Millis> retime = server_ttl_for(node.server_ttl, node.deadline, ttl, sent);
    std::string sql = "SELECT 1";
    std::vector<std::string> params;
    if (retime) {
      Keepalive k = keepalive_for(*retime);
      sql = "SELECT set_config('tcp_keepalives_idle', $1, false), set_config('tcp_keepalives_interval', $2, false), "
            "set_config('tcp_keepalives_count', $3, false), set_config('tcp_user_timeout', $4, false)";
      params = {std::to_string(k.idle), std::to_string(k.interval), std::to_string(k.count),
                std::to_string(k.user_timeout.count())};
    }
    try {
      // query() first reads the answer to the note sent at acquisition
      // (usually there already): it says nothing about the session now.
      // A renewal that changes the keepalives and goes unanswered leaves
      // the server with either setting: the next one sets it again.
      if (retime) node.server_ttl = Millis(0);
      Rows rows = node.connection->query(sql + node.note, params, by);
      if (!rows.ok()) {
        result.reason = rows.error;
        return result;
      }
      // Both statements return one row: anything else (a reply to another
      // statement, from a broken pooler or proxy) confirms nothing.
      if (rows.rows.size() != 1) {
        result.reason = fmt::format("{}: the server's answer to the renewal has {} rows, not 1: not a server dlock "
                                    "can count on",
                                    m_label, rows.rows.size());
        return result;
      }
      if (retime) {
        node.server_ttl = *retime;
        node.connection->set_keepalive(keepalive_for(*retime));
      }
      result.outcome = RenewOutcome::renewed;
      result.ttl = ttl;
      result.sent_at = sent;
      node.deadline = std::max(node.deadline, sent + ttl);
    } catch (const SessionGone &gone) {
      result.outcome = RenewOutcome::lost;
      result.reason = fmt::format("the PostgreSQL session ended ({}): its advisory lock went with it", gone.what());
    } catch (const Error &failure) {
      result.reason = failure.what();
    }
    return result;
  }

  ReleaseOutcome release(const Lease &lease) override {
    auto held = m_held.find(lease.token);
    if (held == m_held.end()) return ReleaseOutcome::not_owner;
    Held node = std::move(held->second);
    m_held.erase(held);
    try {
      Rows rows = node.connection->query("SELECT pg_advisory_unlock(" + std::string(k_key) + ")", {node.key},
                                         SteadyClock::now() + m_config.connect_timeout);
      if (!rows.ok()) throw UnavailableError(fmt::format("{}: cannot release: {}", m_label, rows.error));
      return rows.rows.size() == 1 && rows.rows[0][0] == std::optional<std::string>("t") ? ReleaseOutcome::released
                                                                                         : ReleaseOutcome::not_owner;
    } catch (const SessionGone &) {
      return ReleaseOutcome::not_owner;
    }
  }

  std::optional<LockStatus> force_release(const std::string &name) override {
    auto found = inspect(name);
    if (!found.status.held) return std::nullopt;
    Rows rows = inspector().query("SELECT pg_terminate_backend($1::int)", {std::to_string(found.backend_pid)},
                                  SteadyClock::now() + m_config.connect_timeout);
    if (!rows.ok()) {
      if (rows.sqlstate == "42501")
        throw Error(ExitCode::auth, fmt::format("{}: not allowed to end the holder's session (backend pid {}): {}",
                                                m_label, found.backend_pid, rows.error));
      throw UnavailableError(fmt::format("{}: cannot end the holder's session: {}", m_label, rows.error));
    }
    return found.status;
  }

  LockStatus status(const std::string &name) override { return inspect(name).status; }

  std::vector<LockStatus> list(const std::string &prefix) override {
    Rows rows = inspector().query(
        "SELECT a.query FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND "
        "l.granted AND l.objsubid = 1 AND a.application_name LIKE 'dlock:%'",
        {}, SteadyClock::now() + m_config.connect_timeout);
    if (!rows.ok()) throw UnavailableError(fmt::format("{}: cannot list locks: {}", m_label, rows.error));
    std::vector<std::string> names;
    for (const auto &row : rows.rows) {
      auto note = row[0] ? note_in(*row[0]) : std::nullopt;
      if (!note || note->value("ns", "") != m_config.lock_namespace) continue;
      std::string name = note->value("name", "");
      if (!name.empty() && name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::vector<LockStatus> out;
    for (const auto &name : names)
      if (auto found = inspect(name); found.status.held) out.push_back(std::move(found.status));
    return out;
  }

  PingResult ping() override {
    PingResult result;
    NodeHealth health;
    health.address = m_label;
    auto started = SteadyClock::now();
    try {
      PgConnection &connection = inspector();
      auto sent = SteadyClock::now();
      Rows first = connection.query("SELECT pg_backend_pid()", {}, sent + m_config.connect_timeout);
      health.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - sent);
      Rows second = connection.query("SELECT pg_backend_pid()", {}, SteadyClock::now() + m_config.connect_timeout);
      health.reachable = true;
      int version = connection.server_version();
      health.version = fmt::format("PostgreSQL {}.{}", version / 10000, version % 10000);
      // A pooler in transaction mode hands each transaction to whichever
      // server session is free: a session lock would stay with a session
      // this client no longer talks to.
      if (first.ok() && second.ok() && first.rows != second.rows)
        result.detail = "warning: consecutive statements ran in different server sessions: a connection pooler in "
                        "transaction mode? Session advisory locks do not work through it";
    } catch (const std::exception &failure) {
      health.error = failure.what();
      health.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - started);
    }
    result.nodes.push_back(health);
    return result;
  }

  // The session's socket: while the job or a descendant of it keeps its
  // copy open, the server sees no end of the connection, even after dlock
  // was killed. release() ends the lock all the same: pg_advisory_unlock,
  // then PQfinish's Terminate message, on which the server ends the session.
  std::vector<int> lifetime_fds(const Lease &lease) const override {
    auto held = m_held.find(lease.token);
    if (held == m_held.end()) return {};
    return {held->second.connection->socket()};
  }

  bool lock_follows_job() const override { return true; }

  int event_fd() const override {
    // The socket of the lock's session turns readable when the server ends
    // it (a terminate, a shutdown): the heartbeat then renews at once.
    if (m_held.size() != 1) return -1;
    return m_held.begin()->second.connection->socket();
  }

private:
  struct Held {
    std::unique_ptr<PgConnection> connection;
    std::string key; // advisory_key, in decimal
    std::string note;
    // The T the server's keepalives give the session after the last thing
    // it heard from us (0: unknown, a change of it went unanswered).
    Millis server_ttl{};
    // The latest t0 + T promised to the caller.
    SteadyClock::time_point deadline{};
    // The lock's length: what renew() with ttl 0 renews it for.
    Millis length{};
  };

  struct Found {
    LockStatus status;
    int backend_pid = 0;
  };

  // The key parameter ($1) of every statement about lock `name`.
  std::string key_of(const std::string &name) const {
    return std::to_string(advisory_key(m_config.lock_namespace + " " + name));
  }

  std::unique_ptr<PgConnection> connect(const std::string &application_name, Millis ttl) {
    Keepalive k = keepalive_for(ttl);
    std::vector<std::string> keywords = {"dbname",          "application_name",    "keepalives",
                                         "keepalives_idle", "keepalives_interval", "keepalives_count",
                                         "tcp_user_timeout"};
    std::vector<std::string> values = {
        m_config.url.original,      application_name.substr(0, 63), "1",
        std::to_string(k.idle),     std::to_string(k.interval),     std::to_string(k.count),
        std::to_string(ttl.count())};
    std::string options = startup_options(k);
    if (auto given = m_config.url.query.find("options"); given != m_config.url.query.end())
      options = given->second + " " + options;
    keywords.push_back("options");
    values.push_back(options);
    if (m_config.password) {
      keywords.push_back("password");
      values.push_back(*m_config.password);
    }
    return std::make_unique<PgConnection>(keywords, values, SteadyClock::now() + m_config.connect_timeout, m_label);
  }

  PgConnection &inspector() {
    if (!m_inspector || m_inspector->broken()) m_inspector = connect("dlock (inspect)", Millis(30'000));
    return *m_inspector;
  }

  nlohmann::json note_for(const LockRequest &request, std::optional<std::uint64_t> fence) const {
    nlohmann::json note;
    note["ns"] = m_config.lock_namespace;
    note["name"] = request.name;
    add_holder(note, request.holder);
    if (fence) note["fence"] = *fence;
    return note;
  }

  AcquireResult take(const LockRequest &request, bool wait, std::optional<SteadyClock::time_point> deadline,
                     const Interrupt *interrupt) override {
    if (request.mode != HoldMode::exclusive) refuse_mode(request, "postgres", "not offered by this backend yet");
    auto connection = connect("dlock:" + request.name, request.ttl);
    std::string key = key_of(request.name);
    std::string comment = note_comment(note_for(request, std::nullopt));
    auto round_trip = [&] { return SteadyClock::now() + m_config.connect_timeout; };
    // One attempt first: a free lock costs no lock_timeout. The xid is
    // taken only when the lock was, and made durable: a transaction that
    // writes no WAL commits without flushing it, and after a crash its xid
    // would be handed out again. The (empty, transactional) logical message
    // makes the commit wait for the flush, so a fence never repeats.
    // The same statement applies the session settings that the startup
    // options could not (the subquery's row is computed, lock or not).
    auto sent = SteadyClock::now();
    Rows rows = connection->query(fmt::format("SELECT txid_current(), pg_logical_emit_message(true, 'dlock', '') FROM "
                                              "(SELECT pg_try_advisory_lock({}) AS ok{} OFFSET 0) s WHERE ok{}",
                                              k_key, session_settings(connection->server_version()), comment),
                                  {key}, round_trip());
    if (!rows.ok()) fail(rows);
    if (rows.rows.empty()) {
      if (!wait) return {AcquireOutcome::busy, std::nullopt, 0};
      // Block server-side, bounded by lock_timeout = what is left of --wait.
      long long left = 0; // 0: no limit
      if (deadline) left = std::max<long long>(1, std::chrono::ceil<Millis>(*deadline - SteadyClock::now()).count());
      // (statement_timeout, which would end the wait early with another
      // error, is off: see startup_options.)
      Rows set = connection->query("SELECT set_config('lock_timeout', $1, false)", {std::to_string(left) + "ms"},
                                   round_trip());
      if (!set.ok()) fail(set);
      sent = SteadyClock::now();
      auto client_deadline = deadline ? *deadline + m_config.connect_timeout : SteadyClock::time_point::max();
      rows = connection->query(
          fmt::format("SELECT txid_current(), pg_logical_emit_message(true, 'dlock', '') FROM (SELECT "
                      "pg_advisory_lock({}) OFFSET 0) s{}",
                      k_key, comment),
          {key}, client_deadline, interrupt->fd());
      if (!rows.ok() && rows.sqlstate == "57014" && interrupt->requested())
        return {AcquireOutcome::interrupted, std::nullopt, interrupt->requested()};
      // Cancelled by someone else (pg_cancel_backend): neither busy nor
      // held. The lock may have been granted just before, but fail() ends
      // the session with `connection`, and the lock with it.
      if (!rows.ok() && rows.sqlstate == "57014")
        throw UnavailableError(
            fmt::format("{}: the wait for the lock was cancelled on the server ({})", m_label, rows.error));
      if (!rows.ok() && rows.sqlstate == "55P03") {
        // lock_timeout fired: the lock may have been granted at that very
        // moment, and a session lock outlives the failed statement.
        sent = SteadyClock::now();
        rows = connection->query(
            fmt::format("SELECT txid_current(), pg_logical_emit_message(true, 'dlock', '') FROM pg_locks l "
                        "WHERE {} AND l.pid = pg_backend_pid() AND l.granted",
                        lock_rows_where()),
            {key}, round_trip());
        if (rows.ok() && rows.rows.empty()) return {AcquireOutcome::busy, std::nullopt, 0};
      }
      if (!rows.ok()) fail(rows);
    }
    // Granted just as a signal asked us to stop: the job must not start;
    // closing the session (with `connection`) lets go of the lock.
    if (wait && interrupt->requested() && rows.ok())
      return {AcquireOutcome::interrupted, std::nullopt, interrupt->requested()};
    if (rows.rows.size() != 1 || !rows.rows[0][0])
      throw Error(ExitCode::internal, fmt::format("{}: unexpected answer to the lock query", m_label));
    std::uint64_t fence = std::stoull(*rows.rows[0][0]);
    // The note with the fence, for status, goes out without waiting for
    // its answer: the job starts a round trip sooner. The answer makes the
    // socket (event_fd) readable, and the renewal that follows reads it.
    std::string note = note_comment(note_for(request, fence));
    connection->send("SELECT 1" + note, {});
    std::string token = random_hex(16);
    m_held[token] = Held{std::move(connection), key, note, request.ttl, sent + request.ttl, request.ttl};
    Lease lease;
    lease.name = request.name;
    lease.token = token;
    lease.fence = fence;
    lease.ttl = request.ttl;
    lease.confirmed_at = sent;
    return {AcquireOutcome::acquired, std::move(lease), 0};
  }

  Found inspect(const std::string &name) {
    Rows rows = inspector().query(
        fmt::format(
            "SELECT l.granted, l.pid, host(a.client_addr), (extract(epoch from a.backend_start) * 1000)::bigint, "
            "a.query FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE {}",
            lock_rows_where()),
        {key_of(name)}, SteadyClock::now() + m_config.connect_timeout);
    if (!rows.ok()) throw UnavailableError(fmt::format("{}: cannot read pg_locks: {}", m_label, rows.error));
    Found found;
    found.status.name = name;
    std::int64_t waiters = 0;
    for (const auto &row : rows.rows) {
      if (row[0] != std::optional<std::string>("t")) {
        ++waiters;
        continue;
      }
      found.status.held = true;
      found.backend_pid = row[1] ? std::stoi(*row[1]) : 0;
      std::string address = row[2] ? *row[2] : "a local socket";
      auto note = row[4] ? note_in(*row[4]) : std::nullopt;
      if (note) {
        found.status.holder = holder_in(*note);
        if (note->contains("fence")) found.status.fence = note->value("fence", std::uint64_t{0});
      }
      if (found.status.holder) {
        found.status.detail = fmt::format("server session pid {} from {}", found.backend_pid, address);
      } else if (row[4] == std::optional<std::string>("<insufficient privilege>")) {
        found.status.detail = fmt::format("server session pid {} of another role: its holder is not visible to this "
                                          "one (pg_read_all_stats would show it)",
                                          found.backend_pid);
      } else {
        found.status.detail =
            fmt::format("server session pid {} from {}, not dlock's (no holder note)", found.backend_pid, address);
      }
    }
    found.status.waiters = waiters;
    return found;
  }

  [[noreturn]] void fail(const Rows &rows) const {
    if (rows.sqlstate.rfind("28", 0) == 0 || rows.sqlstate == "42501")
      throw Error(ExitCode::auth, fmt::format("{}: {}", m_label, rows.error));
    throw UnavailableError(fmt::format("{}: {} (SQLSTATE {})", m_label, rows.error, rows.sqlstate));
  }

  BackendConfig m_config;
  std::string m_label;
  std::map<std::string, Held> m_held; // by release token
  std::unique_ptr<PgConnection> m_inspector;
};

} // namespace

std::optional<nlohmann::json> note_in(const std::string &query) {
  auto start = query.find("/* dlock {");
  if (start == std::string::npos) return std::nullopt;
  start += 9;
  auto end = query.rfind(" */");
  if (end == std::string::npos || end < start) return std::nullopt;
  auto doc = nlohmann::json::parse(query.substr(start, end - start), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  return doc;
}

std::int64_t advisory_key(std::string_view key_text) {
  auto digest = sha256(key_text);
  std::uint64_t key = 0;
  for (int i = 0; i < 8; ++i)
    key = key << 8 | digest[i];
  return static_cast<std::int64_t>(key); // two's complement, as PostgreSQL's bit(64)::bigint
}

std::unique_ptr<Backend> create_postgres_backend(const BackendConfig &config) {
  return std::make_unique<PostgresBackend>(config);
}

} // namespace dlock::backend::postgres
