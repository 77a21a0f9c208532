#include "backend/postgres/pg_backend.hpp"

#include "backend/postgres/pg_connection.hpp"
#include "backend/postgres/pg_session.hpp"
#include "core/error.hpp"
#include "core/holder_json.hpp"
#include "core/log.hpp"
#include "core/sha256.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <random>

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

// The note of a long statement goes first: pg_stat_activity keeps only the
// first track_activity_query_size bytes (1 kB by default) of a statement.
std::string note_first(const std::string &comment) { return comment.substr(1); }

// The columns that take the fence, in the statement that got the lock: the
// xid is taken only when the lock was, and made durable: a transaction
// that writes no WAL commits without flushing it, and after a crash its xid
// would be handed out again. The (empty, transactional) logical message
// makes the commit wait for the flush, so a fence never repeats. One
// sequence for every name and mode: a reader's fence exceeds that of every
// writer before it, a writer's that of every holder before it.
constexpr const char *k_fence_columns = "txid_current(), pg_logical_emit_message(true, 'dlock', '')";

// The mode a holder's note gives (none: an exclusive lock, as dlock wrote
// it before the other modes), and the limit of a semaphore's.
struct NotedHold {
  HoldMode mode = HoldMode::exclusive;
  unsigned limit = 1;
};

NotedHold hold_in(const nlohmann::json &note) {
  NotedHold hold;
  std::string mode = note.contains("mode") && note["mode"].is_string() ? note["mode"].get<std::string>() : "";
  if (mode == "shared") hold.mode = HoldMode::shared;
  if (mode == "semaphore" && note.contains("limit") && note["limit"].is_number_unsigned()) {
    auto limit = note["limit"].get<std::uint64_t>();
    if (limit >= 1 && limit <= max_limit) hold = {HoldMode::semaphore, static_cast<unsigned>(limit)};
  }
  return hold;
}

std::string describe_hold(const NotedHold &hold) {
  if (hold.mode == HoldMode::semaphore) return fmt::format("a semaphore of {} (--limit {})", hold.limit, hold.limit);
  return hold.mode == HoldMode::shared ? "a shared lock (--shared)" : "an exclusive lock";
}

// A PostgreSQL array literal of numbers, for unnest($n::bigint[]).
template <typename Number> std::string array_of(const std::vector<Number> &numbers) {
  std::string text = "{";
  for (std::size_t i = 0; i < numbers.size(); ++i)
    text += (i ? "," : "") + std::to_string(numbers[i]);
  return text + "}";
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
      Rows rows =
          node.connection->query(node.unlock, node.unlock_params, SteadyClock::now() + m_config.connect_timeout);
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
    // A shared lock or a semaphore: every holder's session.
    for (int pid : found.backend_pids) {
      Rows rows = inspector().query("SELECT pg_terminate_backend($1::int)", {std::to_string(pid)},
                                    SteadyClock::now() + m_config.connect_timeout);
      if (!rows.ok()) {
        if (rows.sqlstate == "42501")
          throw Error(ExitCode::auth, fmt::format("{}: not allowed to end the holder's session (backend pid {}): {}",
                                                  m_label, pid, rows.error));
        throw UnavailableError(fmt::format("{}: cannot end the holder's session: {}", m_label, rows.error));
      }
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
    std::string unlock; // the statement that lets go of the lock, and its parameters
    std::vector<std::string> unlock_params;
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
    std::vector<int> backend_pids; // the holders' sessions
  };

  // A session holding the name's key, as inspect() reads it.
  struct Session {
    int pid = 0;
    std::string address;
    std::optional<std::string> query;
    std::optional<nlohmann::json> note;
    bool share = false; // pg_advisory_lock_shared
  };

  // One statement on a lock's session: what it returned, and when it was
  // sent (t0, when it took the lock).
  struct Answer {
    Rows rows;
    SteadyClock::time_point sent{};
  };

  enum class Waited { granted, timed_out, interrupted };

  // The key parameter ($1) of every statement about lock `name`.
  std::string key_of(const std::string &name) const {
    return std::to_string(advisory_key(m_config.lock_namespace + " " + name));
  }

  // Slot K of semaphore `name`: the key of "NS NAME K" (see the header).
  std::string slot_key_of(const std::string &name, unsigned slot) const {
    return std::to_string(advisory_key(slot_key_text(m_config.lock_namespace, name, slot)));
  }

  // The keys of `slots` of semaphore `name`, as an array literal.
  std::string slot_keys_of(const std::string &name, const std::vector<unsigned> &slots) const {
    std::vector<std::int64_t> keys;
    for (unsigned slot : slots)
      keys.push_back(advisory_key(slot_key_text(m_config.lock_namespace, name, slot)));
    return array_of(keys);
  }

  SteadyClock::time_point round_trip() const { return SteadyClock::now() + m_config.connect_timeout; }

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

  // The note says how the lock is held, so that other acquirers can tell a
  // name held in another mode or with another limit.
  nlohmann::json note_for(const LockRequest &request, std::optional<std::uint64_t> fence,
                          std::optional<unsigned> slot) const {
    nlohmann::json note;
    note["ns"] = m_config.lock_namespace;
    note["name"] = request.name;
    add_holder(note, request.holder);
    if (fence) note["fence"] = *fence;
    if (request.mode != HoldMode::exclusive) note["mode"] = to_string(request.mode);
    if (request.mode == HoldMode::semaphore) note["limit"] = request.limit;
    if (slot) note["slot"] = *slot;
    return note;
  }

  AcquireResult take(const LockRequest &request, bool wait, std::optional<SteadyClock::time_point> deadline,
                     const Interrupt *interrupt) override {
    auto connection = connect("dlock:" + request.name, request.ttl);
    std::string key = key_of(request.name);
    std::string comment = note_comment(note_for(request, std::nullopt, std::nullopt));
    std::optional<Answer> got = request.mode == HoldMode::semaphore
                                    ? take_slot(*connection, request, key, comment, wait, deadline, interrupt)
                                    : take_key(*connection, request, key, comment, wait, deadline, interrupt);
    if (!got && wait && interrupt->requested())
      return {AcquireOutcome::interrupted, std::nullopt, interrupt->requested()};
    if (!got) return {AcquireOutcome::busy, std::nullopt, 0};
    // Granted just as a signal asked us to stop: the job must not start;
    // closing the session (with `connection`) lets go of the lock.
    if (wait && interrupt->requested()) return {AcquireOutcome::interrupted, std::nullopt, interrupt->requested()};
    const Rows &rows = got->rows;
    bool semaphore = request.mode == HoldMode::semaphore;
    if (rows.rows.size() != 1 || rows.rows[0].size() < (semaphore ? 3U : 1U) || !rows.rows[0][0] ||
        (semaphore && !rows.rows[0][2]))
      throw Error(ExitCode::internal, fmt::format("{}: unexpected answer to the lock query", m_label));
    std::uint64_t fence = std::stoull(*rows.rows[0][0]);
    std::optional<unsigned> slot;
    if (semaphore) slot = static_cast<unsigned>(std::stoul(*rows.rows[0][2]));
    if (slot && *slot >= request.limit)
      throw Error(ExitCode::internal,
                  fmt::format("{}: the lock query answered slot {} of {}", m_label, *slot, request.limit));
    // The note with the fence, for status, goes out without waiting for
    // its answer: the job starts a round trip sooner. The answer makes the
    // socket (event_fd) readable, and the renewal that follows reads it.
    // The other modes first check, with that note, that nobody holds the
    // name in another way.
    std::string note = note_comment(note_for(request, fence, slot));
    if (request.mode != HoldMode::exclusive)
      if (auto mixed = mixed_with(*connection, request, key, note)) refuse_mode(request, "postgres", *mixed);
    connection->send("SELECT 1" + note, {});
    std::string token = random_hex(16);
    Held held{std::move(connection), "", {}, note, request.ttl, got->sent + request.ttl, request.ttl};
    if (request.mode == HoldMode::exclusive) {
      held.unlock = fmt::format("SELECT pg_advisory_unlock({})", k_key);
      held.unlock_params = {key};
    } else if (request.mode == HoldMode::shared) {
      held.unlock = fmt::format("SELECT pg_advisory_unlock_shared({})", k_key);
      held.unlock_params = {key};
    } else {
      held.unlock = "SELECT pg_advisory_unlock($1::bigint), pg_advisory_unlock_shared($2::bigint)";
      held.unlock_params = {slot_key_of(request.name, *slot), key};
    }
    m_held[token] = std::move(held);
    Lease lease;
    lease.name = request.name;
    lease.token = token;
    lease.fence = fence;
    lease.ttl = request.ttl;
    lease.confirmed_at = got->sent;
    lease.mode = request.mode;
    lease.limit = request.limit;
    lease.slot = slot;
    return {AcquireOutcome::acquired, std::move(lease), 0};
  }

  // An exclusive or a shared lock: the name's key, taken with or without
  // pg_advisory_lock_shared. nullopt: busy (or interrupted, which the
  // caller sees in `interrupt`).
  std::optional<Answer> take_key(PgConnection &connection, const LockRequest &request, const std::string &key,
                                 const std::string &comment, bool wait, std::optional<SteadyClock::time_point> deadline,
                                 const Interrupt *interrupt) {
    const char *shared = request.mode == HoldMode::shared ? "_shared" : "";
    // One attempt first: a free lock costs no lock_timeout. The same
    // statement applies the session settings that the startup options
    // could not (the subquery's row is computed, lock or not).
    Answer answer{{}, SteadyClock::now()};
    answer.rows = connection.query(fmt::format("SELECT {} FROM (SELECT pg_try_advisory_lock{}({}) AS ok{} OFFSET 0) s "
                                               "WHERE ok{}",
                                               k_fence_columns, shared, k_key,
                                               session_settings(connection.server_version()), comment),
                                   {key}, round_trip());
    if (!answer.rows.ok()) fail(answer.rows);
    if (!answer.rows.rows.empty()) return answer;
    if (request.mode == HoldMode::exclusive)
      if (auto mixed = mixed_with(connection, request, key, comment)) refuse_mode(request, "postgres", *mixed);
    if (!wait) return std::nullopt;
    std::string call = fmt::format("pg_advisory_lock{}", shared);
    if (block_on(connection, call, key, deadline, *interrupt, comment, answer) != Waited::granted) return std::nullopt;
    return answer;
  }

  // A semaphore of N: a shared lock on the name's key (which keeps out an
  // exclusive holder of the name, dlock's or psql's), then one of the N
  // slot keys, tried from a random start. Rows: fence columns, then slot.
  std::optional<Answer> take_slot(PgConnection &connection, const LockRequest &request, const std::string &key,
                                  const std::string &comment, bool wait,
                                  std::optional<SteadyClock::time_point> deadline, const Interrupt *interrupt) {
    auto slots = [&] {
      std::vector<unsigned> order(request.limit);
      unsigned start = std::uniform_int_distribution<unsigned>(0, request.limit - 1)(m_random);
      for (unsigned i = 0; i < request.limit; ++i)
        order[i] = (start + i) % request.limit;
      return std::vector<std::string>{slot_keys_of(request.name, order), array_of(order)};
    };
    // The slot scan stops at the first slot it gets (LIMIT 1 over a
    // function scan evaluates its filter row by row); CASE keeps it from
    // trying any while the name's key is out of reach.
    std::vector<std::string> params = slots();
    params.insert(params.begin(), key);
    Answer answer{{}, SteadyClock::now()};
    Rows first = connection.query(
        fmt::format("{} SELECT CASE WHEN s.slot IS NOT NULL THEN txid_current() END, CASE WHEN s.slot IS NOT NULL THEN "
                    "pg_logical_emit_message(true, 'dlock', '') END, s.slot, g.ok FROM (SELECT "
                    "pg_try_advisory_lock_shared({}) AS ok{} OFFSET 0) g LEFT JOIN LATERAL (SELECT u.slot FROM "
                    "unnest($2::bigint[], $3::int[]) AS u(key, slot) WHERE CASE WHEN g.ok THEN "
                    "pg_try_advisory_lock(u.key) ELSE false END LIMIT 1) s ON true",
                    note_first(comment), k_key, session_settings(connection.server_version())),
        params, round_trip());
    if (!first.ok()) fail(first);
    if (first.rows.size() != 1 || first.rows[0].size() != 4)
      throw Error(ExitCode::internal, fmt::format("{}: unexpected answer to the lock query", m_label));
    if (first.rows[0][2]) {
      answer.rows = std::move(first);
      return answer;
    }
    if (auto mixed = mixed_with(connection, request, key, comment)) refuse_mode(request, "postgres", *mixed);
    if (!wait) return std::nullopt;
    if (first.rows[0][3] != std::optional<std::string>("t") &&
        block_on(connection, "pg_advisory_lock_shared", key, deadline, *interrupt, comment, answer, false) !=
            Waited::granted)
      return std::nullopt;
    // Block on one slot, chosen at random, and scan the others again every
    // rescan interval: a release wakes the one waiter on its slot (if
    // any), never all of them; a slot nobody waits on is found at the next
    // rescan of some waiter.
    for (;;) {
      if (interrupt->requested()) return std::nullopt;
      params = slots();
      answer.sent = SteadyClock::now();
      answer.rows = connection.query(
          fmt::format("{} SELECT {}, s.slot FROM (SELECT u.slot FROM unnest($1::bigint[], $2::int[]) AS u(key, "
                      "slot) WHERE pg_try_advisory_lock(u.key) LIMIT 1) s",
                      note_first(comment), k_fence_columns),
          params, round_trip());
      if (!answer.rows.ok()) fail(answer.rows);
      if (!answer.rows.rows.empty()) return answer;
      auto now = SteadyClock::now();
      if (deadline && now >= *deadline) return std::nullopt;
      unsigned slot = std::uniform_int_distribution<unsigned>(0, request.limit - 1)(m_random);
      auto until = now + Millis(std::uniform_int_distribution<int>(250, 750)(m_random));
      if (deadline) until = std::min(until, *deadline);
      Waited waited = block_on(connection, "pg_advisory_lock", slot_key_of(request.name, slot), until, *interrupt,
                               comment, answer, true, ", " + std::to_string(slot));
      if (waited == Waited::interrupted) return std::nullopt;
      if (waited == Waited::granted) return answer;
    }
  }

  // Blocks server-side in `call` on `key`, bounded by lock_timeout = what
  // is left until `until` (none: no limit), until granted, timed out or
  // interrupted. Granted: `answer` holds the fence columns (with `fence`)
  // followed by `extra`, and when the statement was sent.
  Waited block_on(PgConnection &connection, const std::string &call, const std::string &key,
                  std::optional<SteadyClock::time_point> until, const Interrupt &interrupt, const std::string &comment,
                  Answer &answer, bool fence = true, const std::string &extra = "") {
    long long left = 0; // 0: no limit
    if (until) left = std::max<long long>(1, std::chrono::ceil<Millis>(*until - SteadyClock::now()).count());
    // (statement_timeout, which would end the wait early with another
    // error, is off: see startup_options.)
    Rows set = connection.query("SELECT set_config('lock_timeout', $1, false)" + comment, {std::to_string(left) + "ms"},
                                round_trip());
    if (!set.ok()) fail(set);
    std::string columns = (fence ? std::string(k_fence_columns) : std::string("1")) + extra;
    answer.sent = SteadyClock::now();
    auto client_deadline = until ? *until + m_config.connect_timeout : SteadyClock::time_point::max();
    answer.rows =
        connection.query(fmt::format("SELECT {} FROM (SELECT {}({}) OFFSET 0) s{}", columns, call, k_key, comment),
                         {key}, client_deadline, interrupt.fd());
    Rows &rows = answer.rows;
    if (!rows.ok() && rows.sqlstate == "57014" && interrupt.requested()) return Waited::interrupted;
    // Cancelled by someone else (pg_cancel_backend): neither busy nor
    // held. The lock may have been granted just before, but fail() ends
    // the session with its connection, and the lock with it.
    if (!rows.ok() && rows.sqlstate == "57014")
      throw UnavailableError(
          fmt::format("{}: the wait for the lock was cancelled on the server ({})", m_label, rows.error));
    if (!rows.ok() && rows.sqlstate == "55P03") {
      // lock_timeout fired: the lock may have been granted at that very
      // moment, and a session lock outlives the failed statement.
      answer.sent = SteadyClock::now();
      rows = connection.query(fmt::format("SELECT {} FROM pg_locks l WHERE {} AND l.pid = pg_backend_pid() AND "
                                          "l.granted{}",
                                          columns, lock_rows_where(), comment),
                              {key}, round_trip());
      if (rows.ok() && rows.rows.empty()) return Waited::timed_out;
    }
    if (!rows.ok()) fail(rows);
    return Waited::granted;
  }

  // Why `request` cannot have its name while dlock holders of the name's
  // key hold it another way: a semaphore beside an exclusive or shared
  // lock, or with another limit. nullopt: nobody does, as far as the notes
  // that this role may read in pg_stat_activity tell. It runs on the lock's
  // own session, with its note: of two acquirers that check at once, the
  // later one sees the earlier, whose note was there before its lock was.
  std::optional<std::string> mixed_with(PgConnection &connection, const LockRequest &request, const std::string &key,
                                        const std::string &comment) {
    Rows rows = connection.query(
        fmt::format("{} SELECT a.query, host(a.client_addr), l.pid FROM pg_locks l JOIN pg_stat_activity a ON "
                    "a.pid = l.pid WHERE {} AND l.granted AND l.pid <> pg_backend_pid()",
                    note_first(comment), lock_rows_where()),
        {key}, round_trip());
    if (!rows.ok()) fail(rows);
    for (const auto &row : rows.rows) {
      auto note = row[0] ? note_in(*row[0]) : std::nullopt;
      if (!note || note->value("ns", "") != m_config.lock_namespace || note->value("name", "") != request.name)
        continue;
      NotedHold other = hold_in(*note);
      bool one_semaphore = (other.mode == HoldMode::semaphore) != (request.mode == HoldMode::semaphore);
      if (!one_semaphore && (other.mode != HoldMode::semaphore || other.limit == request.limit)) continue;
      auto holder = holder_in(*note);
      return fmt::format("it is held as {}{} (server session pid {})", describe_hold(other),
                         holder ? fmt::format(" by pid {} on {}", holder->pid, holder->host) : "",
                         row[2] ? *row[2] : "?");
    }
    return std::nullopt;
  }

  Found inspect(const std::string &name) {
    Rows rows = inspector().query(
        fmt::format("SELECT l.granted, l.pid, host(a.client_addr), a.query, l.mode FROM pg_locks l LEFT JOIN "
                    "pg_stat_activity a ON a.pid = l.pid WHERE {}",
                    lock_rows_where()),
        {key_of(name)}, round_trip());
    if (!rows.ok()) throw UnavailableError(fmt::format("{}: cannot read pg_locks: {}", m_label, rows.error));
    Found found;
    found.status.name = name;
    std::int64_t waiters = 0;
    std::vector<Session> sessions;
    std::optional<unsigned> limit;
    for (const auto &row : rows.rows) {
      if (row[0] != std::optional<std::string>("t")) {
        ++waiters;
        continue;
      }
      Session session;
      session.pid = row[1] ? std::stoi(*row[1]) : 0;
      session.address = row[2] ? *row[2] : "a local socket";
      session.query = row[3];
      session.note = row[3] ? note_in(*row[3]) : std::nullopt;
      session.share = row[4] == std::optional<std::string>("ShareLock");
      if (session.note && hold_in(*session.note).mode == HoldMode::semaphore) limit = hold_in(*session.note).limit;
      sessions.push_back(std::move(session));
    }
    found.status.waiters = waiters;
    if (sessions.empty()) return found;
    found.status.held = true;
    if (limit) return inspect_slots(name, *limit, sessions.size(), std::move(found));
    bool shared = std::any_of(sessions.begin(), sessions.end(), [](const Session &s) { return s.share; });
    if (!shared) {
      const Session &one = sessions.front();
      found.backend_pids = {one.pid};
      if (one.note) {
        found.status.holder = holder_in(*one.note);
        if (one.note->contains("fence")) found.status.fence = one.note->value("fence", std::uint64_t{0});
      }
      found.status.detail = describe_session(one, found.status.holder.has_value());
      return found;
    }
    found.status.mode = HoldMode::shared;
    std::vector<std::string> others;
    for (const auto &session : sessions) {
      found.backend_pids.push_back(session.pid);
      auto holder = session.note ? holder_in(*session.note) : std::nullopt;
      if (!holder) {
        others.push_back(describe_session(session, false));
        continue;
      }
      HolderStatus entry;
      entry.info = *holder;
      if (session.note->contains("fence")) entry.fence = session.note->value("fence", std::uint64_t{0});
      found.status.holders.push_back(std::move(entry));
    }
    found.status.detail = fmt::format("{} server session(s) share the lock", sessions.size());
    if (!others.empty()) found.status.detail += "; " + fmt::format("{}", fmt::join(others, "; "));
    return found;
  }

  // A semaphore of `limit`: its holders are the sessions on its slot keys.
  // Its waiters are the sessions on the name's key that hold no slot (they
  // wait for one, or scan for one between two waits) and those that wait
  // for the name's key itself.
  Found inspect_slots(const std::string &name, unsigned limit, std::size_t on_key, Found found) {
    found.status.mode = HoldMode::semaphore;
    found.status.limit = limit;
    std::vector<unsigned> slots(limit);
    for (unsigned k = 0; k < limit; ++k)
      slots[k] = k;
    Rows rows = inspector().query(
        "SELECT u.slot, l.granted, l.pid, a.query FROM unnest($1::bigint[], $2::int[]) AS u(key, slot) JOIN pg_locks "
        "l ON l.locktype = 'advisory' AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname "
        "= current_database()) AND l.classid::bigint = (u.key >> 32) & 4294967295 AND l.objid::bigint = u.key & "
        "4294967295 LEFT JOIN pg_stat_activity a ON a.pid = l.pid ORDER BY u.slot",
        {slot_keys_of(name, slots), array_of(slots)}, round_trip());
    if (!rows.ok()) throw UnavailableError(fmt::format("{}: cannot read pg_locks: {}", m_label, rows.error));
    unsigned foreign = 0;
    for (const auto &row : rows.rows) {
      if (row[1] != std::optional<std::string>("t")) continue;
      if (row[2]) found.backend_pids.push_back(std::stoi(*row[2]));
      auto note = row[3] ? note_in(*row[3]) : std::nullopt;
      auto holder = note ? holder_in(*note) : std::nullopt;
      if (!holder) {
        ++foreign;
        continue;
      }
      HolderStatus entry;
      entry.info = *holder;
      if (note->contains("fence")) entry.fence = note->value("fence", std::uint64_t{0});
      entry.slot = row[0] ? std::optional<unsigned>(static_cast<unsigned>(std::stoul(*row[0]))) : std::nullopt;
      found.status.holders.push_back(std::move(entry));
    }
    auto holders = static_cast<std::int64_t>(found.backend_pids.size());
    found.status.waiters =
        found.status.waiters.value_or(0) + std::max<std::int64_t>(0, static_cast<std::int64_t>(on_key) - holders);
    found.status.held = holders > 0;
    found.status.detail = fmt::format("{} of {} slot(s) held", found.backend_pids.size(), limit);
    if (foreign) found.status.detail += fmt::format(", {} by sessions without a readable holder note", foreign);
    return found;
  }

  std::string describe_session(const Session &session, bool noted) const {
    if (noted) return fmt::format("server session pid {} from {}", session.pid, session.address);
    if (session.query == std::optional<std::string>("<insufficient privilege>"))
      return fmt::format("server session pid {} of another role: its holder is not visible to this one "
                         "(pg_read_all_stats would show it)",
                         session.pid);
    return fmt::format("server session pid {} from {}, not dlock's (no holder note)", session.pid, session.address);
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
  std::mt19937 m_random{std::random_device{}()};
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

std::string slot_key_text(std::string_view lock_namespace, std::string_view name, unsigned slot) {
  return fmt::format("{} {} {}", lock_namespace, name, slot);
}

std::unique_ptr<Backend> create_postgres_backend(const BackendConfig &config) {
  return std::make_unique<PostgresBackend>(config);
}

} // namespace dlock::backend::postgres
