#pragma once

#include "backend/backend.hpp"
#include "backend/redis/common.hpp"
#include "backend/redis/connection.hpp"
#include "backend/redis/nodes.hpp"

#include <memory>
#include <random>
#include <string>
#include <vector>

// What the Redlock backend needs beside its class (redlock_backend.cpp):
// requests, reading the nodes' answers, the readers of a shared lock
// (--shared) as a majority sees them, and a waiter's listeners.
namespace dlock::backend::redis {

std::string format_command(const std::vector<std::string> &command);

// Integer `index` of a node's first reply (an array of integers or integer
// strings, or an integer when `index` is 0); -1 when there is none.
long long integer_at(const NodeAnswer &answer, std::size_t index);

// EVAL of one of redlock_scripts.hpp's scripts on a lock's ten keys, the
// single-server backend's layout (semaphore_command()).
std::vector<std::string> redlock_command(const std::string &script, const Keys &keys,
                                         std::initializer_list<std::string> args);

// Fills in the readers of `status` from the nodes' answers to the status
// script: a reader holds the name when a majority of the nodes that
// answered `majority` or more list it live; its time left is the
// majority-th longest of theirs, its fence the largest they recorded. Does
// nothing when a writer holds the name (status.held). Returns the largest
// number of nodes any one reader is live on.
std::size_t add_majority_readers(LockStatus &status, const std::vector<NodeAnswer> &answers, std::size_t majority);

// A Redlock waiter's listeners: one subscriber per node on the waiter's own
// channel (the queue's key + ":" + its id, redlock_scripts.hpp), so that a
// release on a node wakes it only when it is at the head of that node's
// queue, not every waiter.
class RedlockListeners {
public:
  // Subscribes on every node that answers within `per_node`; the others are
  // left out (the waiter's fallback time still wakes it).
  RedlockListeners(const Nodes &nodes, const std::string &channel, Millis per_node);

  // Whether any node listens. Without a listener a waiter must not join the
  // queues: a wake-up would find nobody there and drop it.
  bool any() const { return !m_subscribers.empty(); }

  // Waits for a turn ('turn' on any node), `wake` or a signal. 'next' (the
  // waiters ahead on that node have their turns) brings `wake` forward to
  // just after those turns could have run out; a probe ('ping') needs
  // nothing. A node that goes away is left out of the rest of this wait.
  void wait(SteadyClock::time_point wake, const Interrupt &interrupt, std::minstd_rand &random);

private:
  std::vector<std::unique_ptr<Connection>> m_subscribers;
  std::vector<bool> m_lost;
};

} // namespace dlock::backend::redis
