#include "backend/zookeeper/frame_limit.hpp"

#include "core/log.hpp"
#include "net/net.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <sys/socket.h>
#include <unordered_map>

namespace dlock::backend::zookeeper {

bool FrameReader::take(const unsigned char *data, std::size_t size) {
  while (size > 0 && !m_failed) {
    if (m_body_left > 0) {
      std::size_t step = m_body_left < size ? static_cast<std::size_t>(m_body_left) : size;
      m_body_left -= step;
      data += step;
      size -= step;
      continue;
    }
    m_header[m_header_size++] = *data++;
    --size;
    if (m_header_size < sizeof m_header) continue;
    m_header_size = 0;
    std::uint32_t raw = (std::uint32_t{m_header[0]} << 24) | (std::uint32_t{m_header[1]} << 16) |
                        (std::uint32_t{m_header[2]} << 8) | std::uint32_t{m_header[3]};
    auto length = static_cast<std::int32_t>(raw);
    if (length < 0 || raw > m_limit) {
      m_refused = length;
      m_failed = true;
    } else {
      m_body_left = raw;
    }
  }
  return !m_failed;
}

namespace {

// One reader per socket of the client's (the client has one connection per
// session; dlock may run two sessions at once), reset at every connect.
struct Connection {
  FrameReader reader;
  std::string server;
  bool reported = false;
};
std::mutex g_mutex;
std::unordered_map<int, Connection> g_connections;
std::string g_refusal;

std::string display(const sockaddr *address, socklen_t length) {
  net::Endpoint endpoint;
  if (!address || length > sizeof endpoint.address) return "the server";
  std::memcpy(&endpoint.address, address, length);
  endpoint.length = length;
  return endpoint.display();
}

} // namespace

std::string last_frame_refusal() {
  std::lock_guard lock(g_mutex);
  return g_refusal;
}

void clear_frame_refusal() {
  std::lock_guard lock(g_mutex);
  g_refusal.clear();
}

} // namespace dlock::backend::zookeeper

using dlock::backend::zookeeper::Connection;
using dlock::backend::zookeeper::FrameReader;
using dlock::backend::zookeeper::g_connections;
using dlock::backend::zookeeper::g_mutex;

// The client's connect(): every connection starts with a fresh reader.
extern "C" int dlock_zk_connect(int fd, const sockaddr *address, socklen_t length) {
  {
    std::lock_guard lock(g_mutex);
    g_connections[fd] = Connection{FrameReader(), dlock::backend::zookeeper::display(address, length), false};
  }
  return ::connect(fd, address, length);
}

// The client's recv(): what the server sent, unless a frame announced in it
// is over the limit; then -1 with EMSGSIZE, which the client takes for a
// broken connection.
extern "C" ssize_t dlock_zk_recv(int fd, void *buffer, size_t size, int flags) {
  ssize_t got = ::recv(fd, buffer, size, flags);
  if (got <= 0 || (flags & MSG_PEEK)) return got;
  std::string refusal;
  {
    std::lock_guard lock(g_mutex);
    auto found = g_connections.find(fd);
    if (found == g_connections.end())
      found = g_connections.emplace(fd, Connection{FrameReader(), "the server", false}).first;
    Connection &connection = found->second;
    if (connection.reader.take(static_cast<const unsigned char *>(buffer), static_cast<std::size_t>(got))) return got;
    // Refused once and for the rest of the connection (the bytes after the
    // bad length are never handed on).
    if (!connection.reported) {
      connection.reported = true;
      refusal = fmt::format("{} announced a frame of {} bytes, over the {} MiB limit", connection.server,
                            connection.reader.refused_length(), dlock::backend::zookeeper::k_frame_limit >> 20);
      dlock::backend::zookeeper::g_refusal = refusal;
    }
  }
  if (!refusal.empty()) dlock::detail(1, "zookeeper: {}: connection dropped", refusal);
  errno = EMSGSIZE;
  return -1;
}
