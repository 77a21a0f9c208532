#include "backend/redis/connection.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/net.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace dlock::backend::redis {

namespace {

Millis waited(Deadline since) { return std::chrono::round<Millis>(Clock::now() - since); }

void ignore_sigpipe() {
  // OpenSSL writes with write(2), which raises SIGPIPE on a closed peer;
  // dlock handles the EPIPE instead. Children get the default back.
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
}

} // namespace

Connection::Connection(Address address, ConnectionOptions options)
    : m_address(std::move(address)), m_options(std::move(options)),
      m_where(fmt::format("redis at {}", m_address.display())) {}

Connection::~Connection() { close(); }

void Connection::close() {
  m_tls.reset();
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  m_parser.reset();
  m_prelude.clear();
  m_prelude_replies = 0;
}

void Connection::fail(const std::string &message) {
  close();
  throw UnavailableError(fmt::format("{}: {}", m_where, message));
}

void Connection::connect_socket(Deadline deadline) {
  if (!m_address.socket_path.empty()) {
    sockaddr_un target{};
    target.sun_family = AF_UNIX;
    if (m_address.socket_path.size() >= sizeof target.sun_path)
      throw ConfigError(fmt::format("unix socket path too long: {}", m_address.socket_path));
    std::memcpy(target.sun_path, m_address.socket_path.c_str(), m_address.socket_path.size() + 1);
    m_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (m_fd < 0) throw UnavailableError(errno_message("socket", errno));
    if (::connect(m_fd, reinterpret_cast<sockaddr *>(&target), sizeof target) == 0) return;
    int error = errno;
    if (error != EINPROGRESS && error != EAGAIN) {
      close();
      throw UnavailableError(errno_message(fmt::format("cannot connect to {}", m_where), error));
    }
    if (!wait_ready(true, deadline, -1)) fail("no connection within the connect timeout");
    return;
  }
  m_fd = net::connect_tcp(m_address, deadline, m_where, m_options.timeout).release();
}

void Connection::connect(Deadline deadline) {
  close();
  connect_socket(deadline);
  if (m_options.tls.enabled) {
    ignore_sigpipe();
    try {
      m_tls = std::make_unique<TlsStream>(m_fd, m_options.tls, m_address.host, deadline, m_where);
    } catch (...) {
      close();
      throw;
    }
  }
  if (m_options.password) {
    if (m_options.user.empty())
      append_command(m_prelude, {"AUTH", *m_options.password});
    else
      append_command(m_prelude, {"AUTH", m_options.user, *m_options.password});
    ++m_prelude_replies;
  }
  if (m_options.db != 0) {
    append_command(m_prelude, {"SELECT", std::to_string(m_options.db)});
    ++m_prelude_replies;
  }
}

// A reply from a server close by (loopback, same rack) takes tens of
// microseconds; sleeping in poll() for it costs a wake-up of an idle CPU on
// top, which is most of a round trip on a VM. So a round trip first polls
// the socket for a short while, yielding the CPU in between (the server may
// need it), and only then sleeps. Worst case: k_spin of CPU per round trip.
ssize_t Connection::spin_recv(char *buffer, std::size_t size) {
  constexpr auto k_spin = std::chrono::microseconds(200);
  auto until = Clock::now() + k_spin;
  ssize_t n = -1;
  do {
    sched_yield();
    n = ::recv(m_fd, buffer, size, 0);
  } while (n < 0 && errno == EAGAIN && Clock::now() < until);
  return n;
}

bool Connection::wait_ready(bool for_write, Deadline deadline, int wake_fd) {
  pollfd items[2] = {{m_fd, static_cast<short>(for_write ? POLLOUT : POLLIN), 0}, {wake_fd, POLLIN, 0}};
  for (;;) {
    int ready = poll(items, wake_fd >= 0 ? 2 : 1, net::millis_until(deadline));
    if (ready < 0) {
      if (errno == EINTR) {
        if (wake_fd >= 0 || Clock::now() < deadline) continue;
        return false;
      }
      fail(errno_message("poll", errno));
    }
    if (ready == 0) {
      if (Clock::now() >= deadline) return false;
      continue;
    }
    if (items[0].revents) return true;
    return false; // woken
  }
}

void Connection::write_all(const std::string &bytes, Deadline deadline) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n;
    bool wants_write = true;
    if (m_tls) {
      n = m_tls->write(bytes.data() + done, bytes.size() - done, wants_write);
    } else {
      n = ::send(m_fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) fail(errno_message("cannot send", errno));
    }
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (!wait_ready(wants_write, deadline, -1))
      fail(fmt::format("no progress sending within {}", format_duration(m_options.timeout)));
  }
}

bool Connection::drop_if_closed() {
  if (m_fd < 0) return false;
  // A server that restarted since our last request closed this
  // connection: a request on it would fail although the server is back.
  pollfd item{m_fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&item, 1, 0) <= 0) return false;
  bool closed = (item.revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0;
  if (!closed && (item.revents & POLLIN)) {
    char byte;
    ssize_t n = ::recv(m_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  if (closed) close();
  return closed;
}

void Connection::send(const std::string &commands, Deadline deadline) {
  drop_if_closed();
  if (m_fd < 0) connect(deadline);
  if (m_prelude.empty()) {
    write_all(commands, deadline);
  } else {
    std::string bytes = std::move(m_prelude) + commands;
    m_prelude.clear();
    write_all(bytes, deadline);
  }
}

std::optional<Reply> Connection::read(Deadline deadline, int wake_fd) {
  char buffer[16384];
  for (;;) {
    if (std::optional<Reply> reply = m_parser.next()) {
      if (m_prelude_replies == 0) return reply;
      --m_prelude_replies;
      if (!reply->is_error()) continue;
      std::string text = reply->str;
      close();
      if (text.find("without any password configured") != std::string::npos) {
        throw Error(ExitCode::auth, fmt::format("{} has no password set, but dlock was given one; drop the password "
                                                "or set one on the server (requirepass or ACL)",
                                                m_where));
      }
      if (reply->error_code() == "WRONGPASS" || text.find("invalid password") != std::string::npos ||
          reply->error_code() == "NOAUTH")
        throw Error(ExitCode::auth, fmt::format("{} refused the credentials: {}", m_where, text));
      throw ConfigError(fmt::format("{}: {}", m_where, text));
    }
    bool wants_write = false;
    ssize_t n = -1;
    if (m_tls) {
      n = m_tls->read(buffer, sizeof buffer, wants_write);
    } else {
      n = ::recv(m_fd, buffer, sizeof buffer, 0);
      // (Not when only reading what has arrived: a deadline already due.)
      if (n < 0 && errno == EAGAIN && wake_fd < 0 && deadline > Clock::now()) n = spin_recv(buffer, sizeof buffer);
      if (n < 0 && errno != EAGAIN && errno != EINTR) fail(errno_message("connection lost", errno));
    }
    if (n > 0) {
      m_parser.feed(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) fail("connection closed by the server");
    if (!wait_ready(wants_write, deadline, wake_fd)) return std::nullopt;
  }
}

Deadline Connection::round_trip_deadline(std::optional<Deadline> deadline) const {
  Deadline until = Clock::now() + m_options.timeout;
  return deadline && *deadline < until ? *deadline : until;
}

Reply Connection::call(std::initializer_list<std::string_view> args, std::optional<Deadline> deadline) {
  std::string bytes;
  append_command(bytes, args);
  return call_formatted(bytes, deadline);
}

Reply Connection::call_formatted(const std::string &bytes, std::optional<Deadline> deadline) {
  return std::move(round_trip(bytes, 1, deadline).front());
}

std::vector<Reply> Connection::pipeline(const std::vector<std::vector<std::string>> &commands,
                                        std::optional<Deadline> deadline) {
  std::string bytes;
  for (const auto &command : commands)
    append_command(bytes, command);
  return round_trip(bytes, commands.size(), deadline);
}

std::vector<Reply> Connection::round_trip(const std::string &bytes, std::size_t count,
                                          std::optional<Deadline> deadline) {
  Deadline started = Clock::now(), until = round_trip_deadline(deadline);
  send(bytes, until);
  std::vector<Reply> replies;
  replies.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::optional<Reply> reply = read(until);
    if (!reply) fail(fmt::format("no answer within {}", format_duration(waited(started))));
    replies.push_back(std::move(*reply));
  }
  return replies;
}

} // namespace dlock::backend::redis
