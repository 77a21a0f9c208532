#pragma once
// Where a contender stands in a lock's keys, and who holds the lock: the
// decisions of the etcd backend's lock, shared and semaphore recipes
// (etcd_backend.cpp), made from a listing alone so that they can be tested
// without a server.
//
// A semaphore of N (--limit N) is the keys "NS/NAME/sem/<lease id>", whose
// values carry N: the first N by create revision hold it. The first waiter
// after them watches the deletions under "NS/NAME/sem/"; every later one
// watches the key just before its own, which a waiter that gets a slot
// touches (a put), so each hand-over wakes two waiters, whatever their
// number, in the order they came. A name held one way (exclusive or
// shared, a semaphore, another N) refuses the others (78): each contender
// sees the others' keys in the listing of its own join.
#include "backend/backend.hpp"
#include "backend/etcd/reply.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dlock::backend::etcd {

// A listing of one lock's prefix: the lock's and RWMutex's keys
// (contenders_in(range, "NS/NAME/")) and the semaphore's
// (contenders_in(range, "NS/NAME/sem/")).
struct LockKeys {
  std::vector<Contender> contenders;
  std::vector<Contender> slots;
};

// A semaphore holder's N, from its key's value; nullopt if it has none.
std::optional<unsigned> limit_of(const Contender &slot);

// Where `key`, taken in `mode` (a semaphore of `limit`), stands.
struct Standing {
  enum class Kind { ours, waiting, gone } kind = Kind::gone;
  std::int64_t create_revision = 0;
  // waiting: the key to watch: an exclusive contender's predecessor, a
  // reader's last writer before it, a semaphore waiter's predecessor.
  std::optional<Contender> ahead;
  bool watch_holders = false;           // a semaphore's first waiter: watch every holder's deletion instead
  std::string refusal;                  // non-empty: the name is held another way ("it is held as ...")
  bool semaphore_limit_unknown = false; // refusal names a semaphore whose N the listing lacks
};
Standing standing_in(const LockKeys &keys, const std::string &key, HoldMode mode, unsigned limit);
// What an exclusive or semaphore waiter reads when its watch wakes it,
// instead of the whole queue: in one read-only transaction, its own key
// and the last key under `prefix` (the lock's, or the semaphore's) created
// before it, and for a semaphore of `limit` N (0: not one) up to N + 1 of
// the keys created before it, without values.
Json wake_reads(const std::string &prefix, const std::string &key, std::int64_t create_revision, unsigned limit);
// Where `key` stands by the answer to wake_reads(); nullopt when the
// answer proves nothing (the key before ours is not one of the lock's
// contenders, e.g. one of lock NAME/x's): the whole listing must decide.
std::optional<Standing> standing_on_wake(const Json &answer, const std::string &prefix, const std::string &key,
                                         HoldMode mode, unsigned limit);

// Who holds the lock: the first key; the readers before the first writer;
// or a semaphore's first N. `status` gets held, mode, limit, waiters and
// the name-level fence; the holders' records and leases are the caller's.
struct Holding {
  LockStatus status;
  std::vector<Contender> owners;
};
Holding holding_of(const std::string &name, const LockKeys &keys);

// The names of the locks whose keys a listing of "NS/PREFIX" holds
// (`head` is "NS/"), sorted, each once: a key "NS/NAME/<lease>", or a
// reader's, RWMutex writer's or semaphore holder's "NS/NAME/read/<x>",
// "NS/NAME/write/<x>", "NS/NAME/sem/<lease>".
std::vector<std::string> lock_names_in(const Json &range, const std::string &head, const std::string &prefix);

// Requests of the JSON gateway for a lock's keys.
// The end of the key range of everything that starts with `prefix`.
std::string range_end(std::string prefix);
// Every key under `prefix`, with or without values.
Json range_request(const std::string &prefix, bool keys_only);
// One key, without its value.
Json range_request_of_key(const std::string &key);
// The key under `prefix` created last before `create_revision`, if any:
// an exclusive waiter's predecessor, as etcd's concurrency.Mutex asks.
Json last_before_request(const std::string &prefix, std::int64_t create_revision);

} // namespace dlock::backend::etcd
