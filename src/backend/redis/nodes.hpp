#pragma once

#include "backend/redis/connection.hpp"
#include "core/exit_code.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dlock::backend::redis {

// What one node said to one request: its replies, or why there are none.
struct NodeAnswer {
  bool done = false;
  std::vector<Reply> replies;
  std::string error; // empty when answered
  ExitCode code = ExitCode::unavailable;
  bool refused = false;   // the node answered with an error (AnsweredError)
  Clock::time_point at{}; // when it finished
  bool answered() const { return done && error.empty(); }
};

// The N nodes. A request goes to every node at once: written to each
// socket, then one poll() over all of them collects the replies until the
// caller has heard enough (a majority, usually), or everybody, or the
// deadline. Nodes that are not connected yet connect in parallel, one
// thread each (connecting, unlike a request, can block on one node). A node
// that has not answered when the caller stops waiting loses its connection
// (a late reply must not be taken for the next one); it may still act on
// the request.
class Nodes {
public:
  Nodes(std::vector<Address> addresses, ConnectionOptions options) : m_options(std::move(options)) {
    for (auto &address : addresses)
      m_connections.push_back(std::make_unique<Connection>(std::move(address), m_options));
  }

  std::size_t size() const { return m_connections.size(); }
  std::size_t majority() const { return size() / 2 + 1; }
  std::string address(std::size_t i) const { return m_connections[i]->address().display(); }
  // A new connection to node i, for uses of its own (pub/sub).
  std::unique_ptr<Connection> connect_to(std::size_t i) const {
    return std::make_unique<Connection>(m_connections[i]->address(), m_options);
  }

  using Enough = std::function<bool(const std::vector<NodeAnswer> &)>;

  // requests[i] goes to node i (an empty one: node i is not asked). Ends
  // when every asked node answered or failed, at `deadline`, or once
  // `enough` holds; with `linger`, the others then still get that long (at
  // least twice what the first answers took) before they are given up.
  std::vector<NodeAnswer> exchange(const std::vector<std::string> &requests, std::size_t replies_each,
                                   Deadline deadline, const Enough &enough = {}, Millis linger = Millis(0));

  // The same request to every node.
  std::vector<NodeAnswer> exchange_all(const std::string &request, std::size_t replies_each, Deadline deadline,
                                       const Enough &enough = {}, Millis linger = Millis(0)) {
    return exchange(std::vector<std::string>(size(), request), replies_each, deadline, enough, linger);
  }

private:
  // Connects every asked node that is not connected, in parallel; failures
  // go into `answers`.
  void connect_all(const std::vector<std::string> &requests, Deadline deadline, std::vector<NodeAnswer> &answers);

  ConnectionOptions m_options;
  std::vector<std::unique_ptr<Connection>> m_connections;
};

} // namespace dlock::backend::redis
