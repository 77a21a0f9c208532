#pragma once

#include "backend/backend.hpp"
#include "backend/zookeeper/session.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::backend::zookeeper {

// --limit N in the layout of Apache Curator's InterProcessSemaphoreV2 on
// the lock path P (/NS/NAME): P/locks is an InterProcessMutex
// ("_c_<uuid>-lock-<seq>" nodes) that serialises acquisition, and P/leases
// holds one ephemeral sequential node per holder, "_c_<uuid>-lease-<seq>".
// An acquirer takes the mutex, creates its lease node and lists P/leases:
// while more than N nodes are there it waits (holding the mutex) for the
// children to change; once at most N are, it holds a lease and lets the
// mutex go. Curator stores no N; dlock's lease nodes carry the holder as
// JSON with "limit": N, which another dlock with another N refuses.

inline constexpr std::string_view k_locks_child = "locks";
inline constexpr std::string_view k_leases_child = "leases";

// A lease node's sequence: "<anything>lease-<10 digits>", as Curator's
// "_c_<uuid>-lease-<seq>" (protected) or "lease-<seq>" (unprotected).
std::optional<std::uint64_t> lease_sequence(std::string_view child);

struct LeaseNode {
  std::string node;
  std::uint64_t sequence = 0;
};
// The lease nodes among `children`, by sequence.
std::vector<LeaseNode> lease_nodes(const std::vector<std::string> &children);

// "_c_<random uuid>-lease-": the protected-name prefix of a new lease node.
std::string new_lease_prefix();

// A dlock lease node's data: the holder and N. record_limit() reads N back
// (nullopt for another client's node, or a record without one).
std::string encode_lease_record(const HolderInfo &holder, unsigned limit);
std::optional<unsigned> record_limit(const std::string &data);

// Whether `own` holds a lease among `leases`: Curator's rule, at most N
// lease nodes in all (acquisition is serialised, so the one acquiring is
// the newest). False when `own` is not there.
bool holds_lease(const std::vector<LeaseNode> &leases, std::string_view own, unsigned limit);

// The first min(N, count) lease nodes are the holders (N: the limit of the
// first dlock record, else every node); the rest wait.
struct LeaseData {
  std::string data;
  std::int64_t czxid = 0;
  std::int64_t ctime_ms = 0;
};
LockStatus semaphore_status(const std::string &name, const std::vector<LeaseNode> &leases,
                            const std::vector<LeaseData> &data);

// What the semaphore borrows from the ZooKeeper backend (zk_backend.cpp).
class SemaphoreHost {
public:
  virtual ~SemaphoreHost() = default;
  // The session for an acquisition with `ttl` (nullopt: any live session).
  virtual Session &session(std::optional<Millis> ttl) = 0;
  // The backend's own acquisition (the exclusive lock of a request's name) and release.
  virtual AcquireResult take(const LockRequest &request, bool wait, std::optional<SteadyClock::time_point> deadline,
                             const Interrupt *interrupt) = 0;
  virtual ReleaseOutcome release(const Lease &lease) = 0;
  // Waits for `call`, 69 if it goes unanswered.
  virtual const Call &finish(Session &session, const CallPtr &call, const std::string &what) const = 0;
  virtual void create_parents(Session &session, const std::string &path) = 0;
  // Our node, freshly confirmed: the lease handed out (registered for renew and release).
  virtual Lease hold(Session &session, const LockRequest &request, const std::string &path, const NodeStat &stat) = 0;
  virtual void leave(Session &session, const std::string &path) = 0;
};

// take() for HoldMode::semaphore on lock path `lock`.
AcquireResult take_semaphore(SemaphoreHost &host, const std::string &lock, const LockRequest &request, bool wait,
                             std::optional<SteadyClock::time_point> deadline, const Interrupt *interrupt);

// The semaphore on `lock` as status shows it (not held if no lease node);
// `holder_paths`, when given, gets the holders' lease nodes.
LockStatus inspect_semaphore(SemaphoreHost &host, Session &session, const std::string &lock, const std::string &name,
                             std::vector<std::string> *holder_paths = nullptr);

// release --force: deletes the holders' lease nodes (every lease node
// when N is unknown); returns what it broke, nullopt if nothing was held.
std::optional<LockStatus> break_semaphore(SemaphoreHost &host, Session &session, const std::string &lock,
                                          const std::string &name);

// list(): adds the held semaphores among `names` (not already in `out`,
// as a lock queue of their own) to `out`, drops their mutexes
// (NAME/locks) from it, and sorts it by name.
void add_semaphores(SemaphoreHost &host, Session &session, const std::string &base,
                    const std::vector<std::string> &names, std::vector<LockStatus> &out);

// An exclusive or shared take whose lock node's children (`children`) show
// a semaphore: refuses (78) if P/leases has nodes.
void refuse_beside_semaphore(SemaphoreHost &host, Session &session, const std::string &lock,
                             const std::vector<std::string> &children, const LockRequest &request);

} // namespace dlock::backend::zookeeper
