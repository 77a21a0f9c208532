// The PostgreSQL backend (see pg_backend.hpp). This file holds the
// backend itself: taking a lock (the name's key, or a semaphore's slots,
// waited for server-side), renewing, releasing, ping, and the keys'
// numbers. pg_inspect.cpp holds the reading side: status, list and the
// holders that release --force ends, from pg_locks and the holders' notes
// in pg_stat_activity, the check that refuses a name held in another mode,
// and the notes' format (note_in). pg_connection.cpp drives one libpq
// connection, pg_session.cpp sets up the session that holds a lock.
#include "backend/postgres/pg_backend.hpp"

#include "backend/postgres/pg_connection.hpp"
#include "backend/postgres/pg_diagnose.hpp"
#include "backend/postgres/pg_inspect.hpp"
#include "backend/postgres/pg_session.hpp"
#include "core/error.hpp"
#include "core/holder_json.hpp"
#include "core/log.hpp"
#include "core/sha256.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <random>

namespace dlock::backend::postgres {

namespace {

// The columns that take the fence, in the statement that got the lock: the
// xid is taken only when the lock was, and made durable: a transaction
// that writes no WAL commits without flushing it, and after a crash its xid
// would be handed out again. The (empty, transactional) logical message
// makes the commit wait for the flush, so a fence never repeats. One
// sequence for every name and mode: a reader's fence exceeds that of every
// writer before it, a writer's that of every holder before it.
constexpr const char *k_fence_columns = "txid_current(), pg_logical_emit_message(true, 'dlock', '')";

class PostgresBackend : public TakingBackend {
public:
  explicit PostgresBackend(const BackendConfig &config)
      : m_config(config), m_label(config.url.redacted()),
        m_inspector(config.lock_namespace, m_label, config.connect_timeout) {}

  RenewResult renew(const Lease &lease, Millis ttl, std::optional<SteadyClock::time_point> answer_by) override {
    RenewResult result;
    auto held = m_held.find(lease_key(lease));
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
      // query() first reads the answer to the note sent at acquisition if
      // news_was_expected() did not: it says nothing about the session
      // now. A renewal that changes the keepalives and goes unanswered
      // leaves the server with either setting: the next one sets it again.
      node.note_sent.reset();
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
    auto held = m_held.find(lease_key(lease));
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
    auto found = m_inspector.inspect(inspect_session(), name);
    if (!found.status.held) return std::nullopt;
    // A shared lock or a semaphore: every holder's session.
    for (int pid : found.backend_pids) {
      Rows rows = inspect_session().query("SELECT pg_terminate_backend($1::int)", {std::to_string(pid)},
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

  LockStatus status(const std::string &name) override { return m_inspector.inspect(inspect_session(), name).status; }

  std::vector<LockStatus> list(const std::string &prefix) override {
    return m_inspector.list(inspect_session(), prefix);
  }

  PingResult ping() override {
    PingResult result;
    NodeHealth health;
    health.address = m_label;
    auto started = SteadyClock::now();
    try {
      PgConnection &connection = inspect_session();
      auto sent = SteadyClock::now();
      Finding pooler = pooler_finding(connection, m_config.connect_timeout); // two round trips
      health.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - sent) / 2;
      health.reachable = true;
      int version = connection.server_version();
      health.version = fmt::format("PostgreSQL {}.{}", version / 10000, version % 10000);
      if (pooler.severity != Severity::ok) result.detail = "warning: " + pooler.found;
    } catch (const std::exception &failure) {
      health.error = failure.what();
      health.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - started);
    }
    result.nodes.push_back(health);
    return result;
  }

  std::vector<Finding> diagnose(const DiagnoseOptions &options) override {
    std::vector<std::string> keywords = {"dbname", "application_name"},
                             values = {m_config.url.original, "dlock (doctor)"};
    if (m_config.password) {
      keywords.push_back("password");
      values.push_back(*m_config.password);
    }
    std::vector<Finding> out = diagnose_server(keywords, values, m_label, options.ttl, m_config.connect_timeout);
    out.push_back(session_options_finding([&] { return connect("dlock (doctor)", options.ttl); }, options.ttl,
                                          m_config.connect_timeout));
    return out;
  }

  // The session's socket: while the job or a descendant of it keeps its
  // copy open, the server sees no end of the connection, even after dlock
  // was killed. release() ends the lock all the same: pg_advisory_unlock,
  // then PQfinish's Terminate message, on which the server ends the session.
  std::vector<int> lifetime_fds(const Lease &lease) const override {
    auto held = m_held.find(lease_key(lease));
    if (held == m_held.end()) return {};
    return {held->second.connection->socket()};
  }

  bool lock_follows_job() const override { return true; }

  // The answer to the note sent at acquisition makes the socket readable:
  // news the heartbeat need not renew for (a renewal then would hold up
  // the release of a job that ends at once by a round trip). Anything
  // after it, a terminated session's error or its end, is news to renew for.
  bool news_was_expected(const Lease &lease) override {
    auto held = m_held.find(lease_key(lease));
    if (held == m_held.end() || !held->second.note_sent) return false;
    Held &node = held->second;
    node.note_sent.reset();
    try {
      Rows rows = node.connection->answer(SteadyClock::now() + m_config.connect_timeout);
      return rows.ok() && rows.rows.size() == 1 && !node.connection->input_waiting();
    } catch (const Error &) {
      return false; // the renewal that follows finds out what happened
    }
  }

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
    // When the note went out, while its answer is unread.
    std::optional<SteadyClock::time_point> note_sent{};
  };

  // One statement on a lock's session: what it returned, and when it was
  // sent (t0, when it took the lock).
  struct Answer {
    Rows rows;
    SteadyClock::time_point sent{};
  };

  enum class Waited { granted, timed_out, interrupted };

  // Slot K of semaphore `name`: the key of "NS NAME K" (see the header).
  std::string slot_key_of(const std::string &name, unsigned slot) const {
    return std::to_string(advisory_key(slot_key_text(m_config.lock_namespace, name, slot)));
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

  PgConnection &inspect_session() {
    if (!m_inspect_session || m_inspect_session->broken())
      m_inspect_session = connect("dlock (inspect)", Millis(30'000));
    return *m_inspect_session;
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
    std::string key = key_of(m_config.lock_namespace, request.name);
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
      if (auto mixed = m_inspector.mixed_with(*connection, request, key, note))
        refuse_mode(request, "postgres", *mixed);
    auto note_sent = SteadyClock::now();
    connection->send("SELECT 1" + note, {});
    std::string token = random_hex(16);
    Held held{std::move(connection), "", {}, note, request.ttl, got->sent + request.ttl, request.ttl, note_sent};
    if (request.mode == HoldMode::exclusive) {
      held.unlock = fmt::format("SELECT pg_advisory_unlock({})", k_key);
      held.unlock_params = {key};
    } else if (request.mode == HoldMode::shared) {
      held.unlock = fmt::format("SELECT pg_advisory_unlock_shared({})", k_key);
      held.unlock_params = {key};
    } else {
      held.unlock = "SELECT pg_advisory_unlock($1::bigint), pg_advisory_unlock_shared($2::bigint)";
      held.unlock_params = {slot_key_of(request.name, *slot), key};
      // Above one slot the front waiter LISTENs: it hears of the slot at
      // once (not on a standby, which has no NOTIFY: there it finds the
      // slot at a rescan). The NOTIFY gives the statement a transaction
      // id, whose commit need not wait for a WAL flush.
      if (request.limit > 1) {
        held.unlock += ", set_config('synchronous_commit', 'off', true), CASE WHEN NOT pg_is_in_recovery() THEN "
                       "pg_notify($3, '') END";
        held.unlock_params.push_back(queue_channel(m_config.lock_namespace, request.name));
      }
    }
    m_held[LeaseKey{request.name, token}] = std::move(held);
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
    if (!answer.rows.ok()) fail(m_label, answer.rows);
    if (!answer.rows.rows.empty()) return answer;
    if (request.mode == HoldMode::exclusive)
      if (auto mixed = m_inspector.mixed_with(connection, request, key, comment))
        refuse_mode(request, "postgres", *mixed);
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
      return std::vector<std::string>{slot_keys_of(m_config.lock_namespace, request.name, order), array_of(order)};
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
    if (!first.ok()) fail(m_label, first);
    if (first.rows.size() != 1 || first.rows[0].size() != 4)
      throw Error(ExitCode::internal, fmt::format("{}: unexpected answer to the lock query", m_label));
    if (first.rows[0][2]) {
      answer.rows = std::move(first);
      return answer;
    }
    if (auto mixed = m_inspector.mixed_with(connection, request, key, comment))
      refuse_mode(request, "postgres", *mixed);
    if (!wait) return std::nullopt;
    if (first.rows[0][3] != std::optional<std::string>("t") &&
        block_on(connection, "pg_advisory_lock_shared", key, deadline, *interrupt, comment, answer, false) !=
            Waited::granted)
      return std::nullopt;
    // Queue on the queue key, in the server's FIFO order: only the front
    // waiter looks at the slots, so a release wakes one session, not all.
    // It LISTENs before it scans, so that no release after the scan goes
    // unheard; a holder whose session ended sends nothing, hence the
    // jittered rescans (250-750 ms, by the front waiter alone). Getting a
    // slot lets go of the queue key in the same statement.
    std::string queue_key = std::to_string(advisory_key(queue_key_text(m_config.lock_namespace, request.name)));
    if (block_on(connection, "pg_advisory_lock", queue_key, deadline, *interrupt, comment, answer, false) !=
        Waited::granted)
      return std::nullopt;
    // One slot: the front waiter waits for it server-side, which also
    // hears of a holder whose session ended, and lets go of the queue key
    // in the statement that gets it.
    if (request.limit == 1) {
      Waited waited = block_on(connection, "pg_advisory_lock", slot_key_of(request.name, 0), deadline, *interrupt,
                               comment, answer, true, fmt::format(", 0, pg_advisory_unlock(({})::bigint)", queue_key));
      return waited == Waited::granted ? std::optional<Answer>(std::move(answer)) : std::nullopt;
    }
    std::string channel = queue_channel(m_config.lock_namespace, request.name);
    Rows listen = connection.query(fmt::format("LISTEN {}{}", channel, comment), {}, round_trip());
    if (!listen.ok()) fail(m_label, listen);
    for (;;) {
      if (interrupt->requested()) return std::nullopt;
      params = slots();
      params.push_back(queue_key);
      answer.sent = SteadyClock::now();
      answer.rows = connection.query(
          fmt::format("{} SELECT {}, s.slot, pg_advisory_unlock($3::bigint) FROM (SELECT u.slot FROM "
                      "unnest($1::bigint[], $2::int[]) AS u(key, slot) WHERE pg_try_advisory_lock(u.key) LIMIT 1) s",
                      note_first(comment), k_fence_columns),
          params, round_trip());
      if (!answer.rows.ok()) fail(m_label, answer.rows);
      if (!answer.rows.rows.empty()) {
        Rows unlisten = connection.query("UNLISTEN *" + comment, {}, round_trip());
        if (!unlisten.ok()) fail(m_label, unlisten);
        return answer;
      }
      auto now = SteadyClock::now();
      if (deadline && now >= *deadline) return std::nullopt;
      auto until = now + Millis(std::uniform_int_distribution<int>(250, 750)(m_random));
      if (deadline) until = std::min(until, *deadline);
      connection.wait_notification(until, interrupt->fd());
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
    if (!set.ok()) fail(m_label, set);
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
      throw AnsweredError(
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
    if (!rows.ok()) fail(m_label, rows);
    return Waited::granted;
  }

  BackendConfig m_config;
  std::string m_label;
  PgInspector m_inspector;
  std::map<LeaseKey, Held> m_held; // by name and release token
  std::unique_ptr<PgConnection> m_inspect_session;
  std::mt19937 m_random{std::random_device{}()};
};

} // namespace

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

std::string queue_key_text(std::string_view lock_namespace, std::string_view name) {
  return fmt::format("{} {} queue", lock_namespace, name);
}

std::string queue_channel(std::string_view lock_namespace, std::string_view name) {
  return fmt::format("dlock_{:016x}", static_cast<std::uint64_t>(advisory_key(queue_key_text(lock_namespace, name))));
}

std::unique_ptr<Backend> create_postgres_backend(const BackendConfig &config) {
  return std::make_unique<PostgresBackend>(config);
}

} // namespace dlock::backend::postgres
