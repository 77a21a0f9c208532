#include "backend/postgres/pg_inspect.hpp"

#include "backend/postgres/pg_backend.hpp"
#include "core/error.hpp"
#include "core/holder_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

namespace dlock::backend::postgres {

namespace {

// A session holding the name's key, as inspect() reads it.
struct Session {
  int pid = 0;
  std::string address;
  std::optional<std::string> query;
  std::optional<nlohmann::json> note;
  bool share = false; // pg_advisory_lock_shared
};

std::string describe_session(const Session &session, bool noted) {
  if (noted) return fmt::format("server session pid {} from {}", session.pid, session.address);
  if (session.query == std::optional<std::string>("<insufficient privilege>"))
    return fmt::format("server session pid {} of another role: its holder is not visible to this one "
                       "(pg_read_all_stats would show it)",
                       session.pid);
  return fmt::format("server session pid {} from {}, not dlock's (no holder note)", session.pid, session.address);
}

} // namespace

std::string lock_rows_where() {
  return fmt::format("l.locktype = 'advisory' AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE "
                     "datname = current_database()) AND l.classid::bigint = ({0} >> 32) & 4294967295 AND "
                     "l.objid::bigint = {0} & 4294967295",
                     k_key);
}

std::string key_of(const std::string &lock_namespace, const std::string &name) {
  return std::to_string(advisory_key(lock_namespace + " " + name));
}

std::string slot_keys_of(const std::string &lock_namespace, const std::string &name,
                         const std::vector<unsigned> &slots) {
  std::vector<std::int64_t> keys;
  for (unsigned slot : slots)
    keys.push_back(advisory_key(slot_key_text(lock_namespace, name, slot)));
  return array_of(keys);
}

// Comments nest in PostgreSQL: neither "/*" nor "*/" may appear inside.
std::string note_comment(const nlohmann::json &note) {
  std::string text = note.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (std::size_t at = 0; (at = text.find("/*", at)) != std::string::npos;)
    text.replace(at, 2, "/ *");
  for (std::size_t at = 0; (at = text.find("*/", at)) != std::string::npos;)
    text.replace(at, 2, "* /");
  return " /* dlock " + text + " */";
}

std::string note_first(const std::string &comment) { return comment.substr(1); }

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

PgInspector::PgInspector(std::string lock_namespace, std::string label, Millis round_trip)
    : m_namespace(std::move(lock_namespace)), m_label(std::move(label)), m_round_trip(round_trip) {}

std::vector<LockStatus> PgInspector::list(PgConnection &connection, const std::string &prefix) const {
  Rows rows = connection.query(
      "SELECT a.query FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND "
      "l.granted AND l.objsubid = 1 AND a.application_name LIKE 'dlock:%'",
      {}, answer_by());
  if (!rows.ok()) throw UnavailableError(fmt::format("{}: cannot list locks: {}", m_label, rows.error));
  std::vector<std::string> names;
  for (const auto &row : rows.rows) {
    auto note = row[0] ? note_in(*row[0]) : std::nullopt;
    if (!note || note->value("ns", "") != m_namespace) continue;
    std::string name = note->value("name", "");
    if (!name.empty() && name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::vector<LockStatus> out;
  for (const auto &name : names)
    if (auto found = inspect(connection, name); found.status.held) out.push_back(std::move(found.status));
  return out;
}

std::optional<std::string> PgInspector::mixed_with(PgConnection &connection, const LockRequest &request,
                                                   const std::string &key, const std::string &comment) const {
  Rows rows = connection.query(
      fmt::format("{} SELECT a.query, host(a.client_addr), l.pid FROM pg_locks l JOIN pg_stat_activity a ON "
                  "a.pid = l.pid WHERE {} AND l.granted AND l.pid <> pg_backend_pid()",
                  note_first(comment), lock_rows_where()),
      {key}, answer_by());
  if (!rows.ok()) fail(m_label, rows);
  for (const auto &row : rows.rows) {
    auto note = row[0] ? note_in(*row[0]) : std::nullopt;
    if (!note || note->value("ns", "") != m_namespace || note->value("name", "") != request.name) continue;
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

Found PgInspector::inspect(PgConnection &connection, const std::string &name) const {
  Rows rows = connection.query(
      fmt::format("SELECT l.granted, l.pid, host(a.client_addr), a.query, l.mode FROM pg_locks l LEFT JOIN "
                  "pg_stat_activity a ON a.pid = l.pid WHERE {}",
                  lock_rows_where()),
      {key_of(m_namespace, name)}, answer_by());
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
  if (limit) return inspect_slots(connection, name, *limit, sessions.size(), std::move(found));
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
Found PgInspector::inspect_slots(PgConnection &connection, const std::string &name, unsigned limit, std::size_t on_key,
                                 Found found) const {
  found.status.mode = HoldMode::semaphore;
  found.status.limit = limit;
  std::vector<unsigned> slots(limit);
  for (unsigned k = 0; k < limit; ++k)
    slots[k] = k;
  Rows rows = connection.query(
      "SELECT u.slot, l.granted, l.pid, a.query FROM unnest($1::bigint[], $2::int[]) AS u(key, slot) JOIN pg_locks "
      "l ON l.locktype = 'advisory' AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname "
      "= current_database()) AND l.classid::bigint = (u.key >> 32) & 4294967295 AND l.objid::bigint = u.key & "
      "4294967295 LEFT JOIN pg_stat_activity a ON a.pid = l.pid ORDER BY u.slot",
      {slot_keys_of(m_namespace, name, slots), array_of(slots)}, answer_by());
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

} // namespace dlock::backend::postgres
