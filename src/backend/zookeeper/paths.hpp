#pragma once

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
// "_c_<uuid>-lock-<10 digits>" (dlock does too), kazoo's Lock
// "<uuid>__lock__<10 digits>" and its ReadLock "...__rlock__...", Curator's
// read-write lock "...__READ__..."/"...__WRIT__...": all of them wait in one
// queue, and anything else under the lock node is not a contender.
std::optional<std::uint64_t> contender_sequence(std::string_view child);

struct Contender {
  std::string node; // child name
  std::uint64_t sequence = 0;
};
// The contenders among `children`, in queue order.
std::vector<Contender> contenders(const std::vector<std::string> &children);

// "_c_<random uuid>-lock-": the protected-name prefix of a new contender.
std::string new_node_prefix();

// Node data: the holder as JSON. Data of other clients (Curator stores an
// address, kazoo an identifier) gives nullopt.
std::string encode_holder(const HolderInfo &holder);
std::optional<HolderInfo> decode_holder(const std::string &data);

} // namespace dlock::backend::zookeeper
