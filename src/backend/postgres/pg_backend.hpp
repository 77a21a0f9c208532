#pragma once

#include "backend/backend.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace dlock::backend::postgres {

// postgres:// and postgresql:// (any libpq URI; PG* variables and .pgpass
// honoured): a session-level advisory lock on a 64-bit key derived from
// namespace and name, one server session per held lock. Waiters block
// server-side (pg_advisory_lock under lock_timeout). T is --ttl (or what a
// renewal asks for): renewals are round trips on the lock's session, and
// the server's TCP keepalives are set (anew when T changes) so that it
// frees a vanished client's lock after about T, never sooner; settings
// that would end the session or a statement sooner are turned off for it.
// The fence is txid_current() at acquisition, one sequence for every name
// and mode. --shared is pg_advisory_lock_shared on the name's key.
// --limit N holds the name's key shared (so an exclusive holder of the
// name, dlock's or psql's, and the semaphore exclude each other) and one
// slot key, slot_key_text(); waiters for a full semaphore queue on its
// queue key, queue_key_text(), in the server's FIFO order, and the one at
// the front LISTENs for the NOTIFY of a releasing holder (with a jittered
// rescan for holders whose session ended without one). Each holder's note (in
// pg_stat_activity) says its mode and limit, so that a request in another
// mode or with another limit is refused (78) where this role can read the
// notes. libpq is loaded with dlopen on first use.
std::unique_ptr<Backend> create_postgres_backend(const BackendConfig &config);

// The documented advisory-lock key of `key_text` ("NS NAME"): the first 8
// bytes of its SHA-256, big-endian, as a signed 64-bit number. psql gets
// the same number from
//   ('x' || left(encode(sha256(convert_to('NS NAME', 'UTF8')), 'hex'), 16))::bit(64)::bigint
std::int64_t advisory_key(std::string_view key_text);

// The text whose advisory_key() is slot K of semaphore NAME in NS:
// "NS NAME K", K in decimal. A namespace or name holds no space, so this
// text (two spaces) is never that of a name (one space) or of another
// slot; psql gets the number as above from 'NS NAME K'.
std::string slot_key_text(std::string_view lock_namespace, std::string_view name, unsigned slot);

// The text whose advisory_key() is the queue of semaphore NAME in NS:
// "NS NAME queue", never that of a name or a slot (see above). Its waiters
// wait for it with pg_advisory_lock; the one holding it LISTENs on
// queue_channel(), on which a holder that releases a slot NOTIFYs.
std::string queue_key_text(std::string_view lock_namespace, std::string_view name);
// "dlock_" and the queue key's 16 hex digits.
std::string queue_channel(std::string_view lock_namespace, std::string_view name);

// The holder's note in the SQL text of a lock's session (as read from
// pg_stat_activity.query): the JSON object in its "/* dlock {...} */"
// comment, or nullopt if there is none.
std::optional<nlohmann::json> note_in(const std::string &query);

} // namespace dlock::backend::postgres
