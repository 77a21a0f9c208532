#include "runner/keeper_socket.hpp"

#include "runner/keeper_protocol.hpp"

#include <algorithm>
#include <cerrno>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dlock::runner {

namespace {

using SteadyClock = std::chrono::steady_clock;

// How many connections one serve() accepts, so that a flood of connects
// cannot keep the keeper from its renewals.
constexpr int k_accepts_per_round = 256;

enum class ReadState { waiting, complete, dropped };

// Reads what is there without blocking. complete: `buffer` holds one line
// (without its '\n'); dropped: the peer closed, failed or sent too much.
ReadState read_available(int fd, std::string &buffer) {
  char chunk[1024];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ReadState::waiting;
    if (n <= 0) return ReadState::dropped;
    buffer.append(chunk, static_cast<std::size_t>(n));
    if (auto end = buffer.find('\n'); end != std::string::npos) {
      if (end > k_keeper_line_max) return ReadState::dropped;
      buffer.resize(end);
      return ReadState::complete;
    }
    if (buffer.size() > k_keeper_line_max) return ReadState::dropped;
  }
}

void write_best_effort(int fd, const std::string &text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

} // namespace

bool peer_allowed(uid_t peer, uid_t keeper) { return peer == keeper || peer == 0; }

std::optional<uid_t> peer_uid(int fd) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0 || length != sizeof credentials)
    return std::nullopt;
  return credentials.uid;
}

KeeperSocket::KeeperSocket(UniqueFd listener) : m_listener(std::move(listener)) {}

void KeeperSocket::add_poll_fds(std::vector<pollfd> &fds) const {
  fds.push_back({m_listener.get(), POLLIN, 0});
  for (const Connection &connection : m_connections)
    fds.push_back({connection.fd.get(), POLLIN, 0});
}

std::optional<SteadyClock::time_point> KeeperSocket::next_deadline() const {
  if (m_connections.empty()) return std::nullopt;
  return std::min_element(m_connections.begin(), m_connections.end(),
                          [](const Connection &a, const Connection &b) { return a.deadline < b.deadline; })
      ->deadline;
}

std::vector<PendingRequest> KeeperSocket::serve(const std::vector<pollfd> &fds, std::size_t first) {
  std::vector<PendingRequest> ready;
  auto now = SteadyClock::now();
  // fds[first] is the listener, then one entry per connection in order.
  std::vector<Connection> kept;
  for (std::size_t i = 0; i < m_connections.size(); ++i) {
    Connection &connection = m_connections[i];
    std::size_t at = first + 1 + i;
    bool readable = at < fds.size() && fds[at].fd == connection.fd.get() && fds[at].revents != 0;
    ReadState state = readable ? read_available(connection.fd.get(), connection.buffer) : ReadState::waiting;
    if (state == ReadState::complete)
      ready.push_back({std::move(connection.fd), std::move(connection.buffer)});
    else if (state == ReadState::waiting && now < connection.deadline)
      kept.push_back(std::move(connection));
  }
  m_connections = std::move(kept);
  if (first < fds.size() && (fds[first].revents & POLLIN)) {
    // A client writes its request right after connecting: read it at once,
    // before the next connection can push it out.
    for (int round = 0; round < k_accepts_per_round; ++round) {
      int fd = accept4(m_listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        break; // EAGAIN: nothing left; EMFILE and the like: try again at the next poll
      }
      Connection connection{UniqueFd(fd), {}, SteadyClock::now() + k_request_timeout};
      std::optional<uid_t> peer = peer_uid(fd);
      if (!peer || !peer_allowed(*peer, geteuid())) {
        KeeperReply refused;
        refused.answer = KeeperAnswer::refused;
        write_best_effort(fd, format_reply(refused));
        continue;
      }
      ReadState state = read_available(fd, connection.buffer);
      if (state == ReadState::complete) {
        ready.push_back({std::move(connection.fd), std::move(connection.buffer)});
      } else if (state == ReadState::waiting) {
        if (m_connections.size() >= k_max_connections) m_connections.erase(m_connections.begin());
        m_connections.push_back(std::move(connection));
      }
    }
  }
  return ready;
}

void answer(PendingRequest &request, const std::string &reply) {
  write_best_effort(request.connection.get(), reply);
  request.connection.reset();
}

} // namespace dlock::runner
