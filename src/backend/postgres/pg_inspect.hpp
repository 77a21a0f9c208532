#pragma once

#include "backend/backend.hpp"
#include "backend/postgres/pg_connection.hpp"
#include "core/duration.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

// The reading side of the PostgreSQL backend: what pg_locks and the
// holders' notes in pg_stat_activity say about a name (status, list,
// release --force, and the check that refuses a name held in another
// mode), and the SQL pieces that name a lock's keys, which the acquiring
// side in pg_backend.cpp uses as well.
namespace dlock::backend::postgres {

// The key parameter ($1) of a statement about one advisory key. The key
// is computed here and sent as a number: a fresh server session would
// spend most of a millisecond looking up the functions of the SQL that
// psql users are given (advisory_key in pg_backend.hpp).
constexpr const char *k_key = "$1::bigint";

// The condition on pg_locks l that selects the advisory lock on the key
// $1: pg_locks shows an advisory lock on one bigint as classid (high 32
// bits), objid (low 32 bits) and objsubid 1, in the current database.
std::string lock_rows_where();

// A PostgreSQL array literal of numbers, for unnest($n::bigint[]).
template <typename Number> std::string array_of(const std::vector<Number> &numbers) {
  std::string text = "{";
  for (std::size_t i = 0; i < numbers.size(); ++i)
    text += (i ? "," : "") + std::to_string(numbers[i]);
  return text + "}";
}

// The key parameter of lock `name` in `lock_namespace`.
std::string key_of(const std::string &lock_namespace, const std::string &name);

// The keys of `slots` of semaphore `name` (see slot_key_text), as an
// array literal.
std::string slot_keys_of(const std::string &lock_namespace, const std::string &name,
                         const std::vector<unsigned> &slots);

// The holder's note travels as a comment in the SQL the lock's session
// runs, so that others read it in pg_stat_activity.query (note_in). The
// comment of `note`, with a leading space.
std::string note_comment(const nlohmann::json &note);

// The note of a long statement goes first: pg_stat_activity keeps only the
// first track_activity_query_size bytes (1 kB by default) of a statement.
std::string note_first(const std::string &comment);

// The mode a holder's note gives (none: an exclusive lock, as dlock wrote
// it before the other modes), and the limit of a semaphore's.
struct NotedHold {
  HoldMode mode = HoldMode::exclusive;
  unsigned limit = 1;
};

NotedHold hold_in(const nlohmann::json &note);

// "an exclusive lock", "a shared lock (--shared)", "a semaphore of N (--limit N)".
std::string describe_hold(const NotedHold &hold);

// What the server shows of a name: its status, and the server sessions of
// its holders (whose ends release --force asks for).
struct Found {
  LockStatus status;
  std::vector<int> backend_pids;
};

// Reads what the server says about the names of one namespace, each
// statement on the connection it is given and answered within
// `round_trip`. Failures throw dlock::Error.
class PgInspector {
public:
  PgInspector(std::string lock_namespace, std::string label, Millis round_trip);

  // What the server shows of `name`, held or not, with its waiters.
  Found inspect(PgConnection &connection, const std::string &name) const;

  // The held locks of dlock's whose names start with `prefix`, by name.
  std::vector<LockStatus> list(PgConnection &connection, const std::string &prefix) const;

  // Why `request` cannot have its name while dlock holders of the name's
  // key (`key`) hold it another way: a semaphore beside an exclusive or
  // shared lock, or with another limit. nullopt: nobody does, as far as
  // the notes that this role may read in pg_stat_activity tell. It runs on
  // the lock's own session, with its note `comment`: of two acquirers that
  // check at once, the later one sees the earlier, whose note was there
  // before its lock was.
  std::optional<std::string> mixed_with(PgConnection &connection, const LockRequest &request, const std::string &key,
                                        const std::string &comment) const;

private:
  Found inspect_slots(PgConnection &connection, const std::string &name, unsigned limit, std::size_t on_key,
                      Found found) const;
  SteadyClock::time_point answer_by() const { return SteadyClock::now() + m_round_trip; }

  std::string m_namespace;
  std::string m_label;
  Millis m_round_trip;
};

} // namespace dlock::backend::postgres
