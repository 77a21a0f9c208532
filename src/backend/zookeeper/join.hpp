#pragma once

#include "backend/backend.hpp"
#include "backend/zookeeper/semaphore.hpp"
#include "backend/zookeeper/session.hpp"

#include <string>
#include <vector>

namespace dlock::backend::zookeeper {

// A contender that has joined the queue of a lock.
struct Queued {
  std::vector<std::string> paths;    // our nodes (new_node_prefixes), lowest first
  NodeStat stat;                     // of our first node; the fence is its czxid
  std::vector<std::string> children; // of the lock node, seen after ours were created
};

struct JoinOptions {
  Millis connect_timeout{2000};
  bool restricted = false; // our nodes get the restricted ACL (credentials)
  std::string label;       // the redacted URL, for messages
};

// Joins the queue of `lock` for an exclusive or shared `request`: creates
// our two ephemeral sequential nodes in one transaction (paths.hpp,
// Contender: both or none, adjacent in sequence), and lists the lock
// node's children right after (same round trip: a session's requests are
// answered in order), then reads our first node's stat. A lost connection
// while creating: the protected id finds what was made. Throws
// dlock::Error (69 when ZooKeeper does not answer).
Queued join_queue(SemaphoreHost &host, Session &session, const std::string &lock, const LockRequest &request,
                  const JoinOptions &options);

} // namespace dlock::backend::zookeeper
