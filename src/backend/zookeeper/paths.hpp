#pragma once

#include "backend/backend.hpp"
#include "core/identity.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::backend::zookeeper {

// Where lock NAME of namespace NS lives: <chroot>/NS/NAME, a '/' in NS or
// NAME being a path level. dlock names never hold '%', so a level ZooKeeper
// cannot take as it is ("", ".", "..") or one that would read as a lock
// node (a sub-lock "a/x-lock-0000000001" would be taken for a contender of
// "a") gets a '%' appended: the mapping stays one to one.
std::string lock_path(const std::string &base, const std::string &name);
// <chroot>/NS; throws ConfigError (78) for a chroot that is no znode path
// or a base inside /zookeeper. `chroot` is the URL path ("" or "/x/y").
std::string base_path(const std::string &chroot, const std::string &lock_namespace);
// One level of a name as a znode name, and back.
std::string encode_level(std::string_view level);
std::string decode_level(std::string_view node);
// The ancestors of `path`, outermost first ("/a/b/c": "/a", "/a/b").
std::vector<std::string> ancestors(const std::string &path);

// A contender's node: the sequence ZooKeeper appended, which orders the
// queue. Curator's InterProcessMutex names its nodes
// "_c_<uuid>-lock-<10 digits>", its InterProcessReadWriteLock
// "_c_<uuid>-__READ__<10 digits>" and "...-__WRIT__...", kazoo's Lock
// "<uuid>__lock__<10 digits>" and its ReadLock "...__rlock__...": all of
// them wait in one queue, and anything else under the lock node is not a
// contender.
std::optional<std::uint64_t> contender_sequence(std::string_view child);

// Curator sorts every node by what follows its own markers only ("lock-"
// for the mutex, "__READ__" and "__WRIT__" for the read-write lock) and
// puts all other nodes after its own, so one node cannot stand in both of
// its queues. dlock therefore joins with two nodes of one protected id,
// created in one transaction (adjacent sequence numbers, nothing between
// them): an exclusive lock "-lock-" (Curator's mutex, kazoo's Lock) and
// "__WRIT__" (Curator's read-write lock), a reader "__READ__" and "-lock-".
// The nodes of one protected id ("_c_<id>-") are one contender, a reader
// if one of them is a reader's node, standing where its lowest node does.
struct Contender {
  std::string node; // child name; of a contender with several nodes, the lowest
  std::uint64_t sequence = 0;
  bool reader = false;            // a "__READ__" or "__rlock__" node: shares the lock with other readers; else a writer
  std::vector<std::string> nodes; // all its nodes, lowest first (node is the first)
};
// The contenders among `children`, in queue order.
std::vector<Contender> contenders(const std::vector<std::string> &children);

// Where a contender stands in the queue of its lock. A writer (dlock's
// exclusive lock, Curator's mutex or write lock, kazoo's Lock) holds when
// its node is the first of all and waits for the node just before its own.
// A reader holds when no writer's node is before its own (so a waiting
// writer keeps later readers out: writer preference) and waits for the
// nearest writer before it: only the readers behind one writer wake when
// it goes. A writer node in `own_writers` (one this session holds) does
// not keep our reader out, as Curator lets a write lock's holder take the
// read lock too.
struct QueuePlace {
  bool queued = false; // our node is in the queue
  bool holds = false;
  std::size_t watch = 0;      // when waiting: the index of the node to watch
  bool watch_is_last = false; // once that node goes, nothing before ours keeps us out
};
QueuePlace place_in(const std::vector<Contender> &queue, std::string_view own,
                    const std::vector<std::string> &own_writers = {});

// How many contenders at the head of `queue` hold the lock: one writer, or
// every reader before the first writer.
std::size_t holder_count(const std::vector<Contender> &queue);

// "_c_<random uuid>-lock-" (exclusive) or "_c_<random uuid>-__READ__"
// (shared): the protected-name prefix of a new contender's first node.
std::string new_node_prefix(HoldMode mode = HoldMode::exclusive);
// The prefixes of a new contender's two nodes, in the order they are
// created (one transaction): its first node's as new_node_prefix(mode)
// gives it, then the same protected id with "__WRIT__" (exclusive) or
// "lock-" (shared).
std::vector<std::string> new_node_prefixes(HoldMode mode);
// "_c_<id>-" of a node with a protected name, else empty.
std::string protected_id(std::string_view child);

// Node data: the holder as JSON. Data of other clients (Curator stores an
// address, kazoo an identifier) gives nullopt.
std::string encode_holder(const HolderInfo &holder);
std::optional<HolderInfo> decode_holder(const std::string &data);

// A holder's node as read for `status`.
struct HolderNode {
  std::string data;
  std::int64_t czxid = 0;
  std::int64_t ctime_ms = 0;
  std::int64_t session = 0; // the ephemeral owner
};
// The status of a held lock from its queue and the nodes of its
// holder_count(queue) holders: a writer's in holder and fence, readers'
// each in holders (mode shared) with the czxid of its node as its fence.
LockStatus queue_status(const std::string &name, const std::vector<Contender> &queue,
                        const std::vector<HolderNode> &holders);

} // namespace dlock::backend::zookeeper
