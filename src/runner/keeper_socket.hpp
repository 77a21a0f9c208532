#pragma once

#include "core/duration.hpp"
#include "core/unique_fd.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

struct pollfd;

namespace dlock::runner {

// Only the keeper's own user and root may talk to a keeper: any local
// process can connect to an abstract socket, so the peer's credentials
// (SO_PEERCRED) are checked before a byte is read. Root may, as it may
// kill the keeper anyway; another user may not, even with the token.
bool peer_allowed(uid_t peer, uid_t keeper);

// The credentials' user of the process at the other end of a connected
// unix socket, or nullopt if the kernel does not say.
std::optional<uid_t> peer_uid(int fd);

// One request line read from a connection that is still open for the
// answer.
struct PendingRequest {
  UniqueFd connection;
  std::string line;
};

// The keeper's end of its socket. Connections are non-blocking and served
// side by side: each gets k_request_timeout and k_keeper_line_max bytes
// for its request, and at most k_max_connections are open at once (a new
// one pushes out the oldest), so silent or slow clients can never hold up
// another one; refused users get one "refused" answer and are closed
// without a read.
class KeeperSocket {
public:
  static constexpr std::size_t k_max_connections = 32;
  static constexpr Millis k_request_timeout{1000};

  explicit KeeperSocket(UniqueFd listener);

  // Appends the descriptors to poll for reading, the listener first.
  void add_poll_fds(std::vector<pollfd> &fds) const;
  // When the oldest open connection runs out of time, if any is open.
  std::optional<std::chrono::steady_clock::time_point> next_deadline() const;
  // After poll(): `fds` from add_poll_fds() (from index `first` on) with
  // their revents. Accepts what is pending, reads what is readable, drops
  // what has run out of time or sent too much, and returns the complete
  // requests.
  std::vector<PendingRequest> serve(const std::vector<pollfd> &fds, std::size_t first);

private:
  struct Connection {
    UniqueFd fd;
    std::string buffer;
    std::chrono::steady_clock::time_point deadline;
  };

  void accept_pending();

  UniqueFd m_listener;
  std::vector<Connection> m_connections; // oldest first
};

// Writes `reply` to a request's connection (best effort, never blocks for
// long: a client that does not read loses its answer) and closes it.
void answer(PendingRequest &request, const std::string &reply);

} // namespace dlock::runner
