#include "net/stream.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>

namespace dlock::net {

namespace {

using Clock = std::chrono::steady_clock;

void ignore_sigpipe() {
  // OpenSSL writes with write(2), which raises SIGPIPE on a closed peer;
  // dlock handles the EPIPE instead. Children get the default back.
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
}

UniqueFd connect_unix(const Address &address, Deadline deadline, const std::string &where) {
  sockaddr_un target{};
  target.sun_family = AF_UNIX;
  if (address.socket_path.size() >= sizeof target.sun_path)
    throw ConfigError(fmt::format("unix socket path too long: {}", address.socket_path));
  std::memcpy(target.sun_path, address.socket_path.c_str(), address.socket_path.size() + 1);
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) throw UnavailableError(errno_message("socket", errno));
  if (::connect(fd.get(), reinterpret_cast<sockaddr *>(&target), sizeof target) == 0) return fd;
  int error = errno;
  if (error != EINPROGRESS && error != EAGAIN)
    throw UnavailableError(errno_message(fmt::format("cannot connect to {}", where), error));
  pollfd item{fd.get(), POLLOUT, 0};
  int ready = 0;
  while ((ready = poll(&item, 1, millis_until(deadline))) < 0 && errno == EINTR) {
  }
  if (ready <= 0) throw UnavailableError(fmt::format("{}: no connection within the connect timeout", where));
  return fd;
}

} // namespace

std::string too_large_message(std::size_t limit) {
  if (limit < (1u << 20)) return fmt::format("reply larger than {} KiB: not a server dlock can talk to", limit >> 10);
  return fmt::format("reply larger than {} MiB: not a server dlock can talk to", limit >> 20);
}

Stream::~Stream() { close(); }

void Stream::close() {
  m_tls.reset();
  m_fd.reset();
}

void Stream::adopt(UniqueFd fd) {
  close();
  m_fd = std::move(fd);
}

void Stream::connect(const Address &address, const TlsOptions &tls, Deadline deadline, const std::string &where,
                     Millis timeout) {
  close();
  UniqueFd fd = address.socket_path.empty() ? connect_tcp(address, deadline, where, timeout)
                                            : connect_unix(address, deadline, where);
  if (tls.enabled) {
    ignore_sigpipe();
    m_tls = std::make_unique<TlsSession>(fd.get(), tls, address.host, deadline, where);
  }
  m_fd = std::move(fd);
}

Io Stream::fail(std::string message) {
  m_error = std::move(message);
  return Io::error;
}

Io Stream::too_large(std::size_t limit) { return fail(too_large_message(limit)); }

int Stream::wait(bool for_write, Deadline deadline, int wake_fd) {
  pollfd items[2] = {{m_fd.get(), static_cast<short>(for_write ? POLLOUT : POLLIN), 0}, {wake_fd, POLLIN, 0}};
  for (;;) {
    int ready = poll(items, wake_fd >= 0 ? 2 : 1, millis_until(deadline));
    if (ready < 0 && errno != EINTR) {
      fail(errno_message("poll", errno));
      return -2;
    }
    if (ready > 0) return items[0].revents ? 1 : -1;
    if (Clock::now() >= deadline) return 0;
  }
}

bool Stream::closed_by_peer() const {
  if (!m_fd) return false;
  pollfd item{m_fd.get(), POLLIN | POLLRDHUP, 0};
  if (::poll(&item, 1, 0) <= 0) return false;
  if (item.revents & (POLLHUP | POLLERR | POLLRDHUP)) return true;
  if (!(item.revents & POLLIN)) return false;
  char byte;
  ssize_t n = ::recv(m_fd.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

Io Stream::write_all(std::string_view bytes, Deadline deadline) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = -1;
    bool wants_write = true;
    if (m_tls) {
      try {
        n = m_tls->write(bytes.data() + done, bytes.size() - done, wants_write);
      } catch (const Error &error) {
        return fail(error.what());
      }
    } else {
      n = ::send(m_fd.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) return fail(errno_message("cannot send", errno));
    }
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (int ready = wait(wants_write, deadline, -1); ready <= 0) {
      return ready == -2 ? Io::error : Io::timeout;
    }
  }
  return Io::data;
}

// A reply from a server close by (loopback, same rack) takes tens of
// microseconds; sleeping in poll() for it costs a wake-up of an idle CPU on
// top, which is most of a round trip on a VM. So with spinning on, a read
// first polls the socket for a short while, yielding the CPU in between
// (the server may need it), and only then sleeps. Worst case: 200 us of CPU
// per round trip. (Not with a wake fd, nor when only taking what arrived.)
Io Stream::read_some(char *buffer, std::size_t size, std::size_t &got, Deadline deadline, int wake_fd) {
  got = 0;
  for (bool spun = !m_spin || m_tls || wake_fd >= 0;;) {
    bool wants_write = false;
    ssize_t n = -1;
    if (m_tls) {
      try {
        n = m_tls->read(buffer, size, wants_write);
      } catch (const Error &error) {
        return fail(error.what());
      }
    } else {
      n = ::recv(m_fd.get(), buffer, size, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) return fail(errno_message("connection lost", errno));
    }
    if (n > 0) {
      got = static_cast<std::size_t>(n);
      return Io::data;
    }
    if (n == 0) return Io::closed;
    if (Clock::now() >= deadline) return Io::timeout;
    if (!spun) {
      spun = true;
      auto until = Clock::now() + std::chrono::microseconds(200);
      do {
        sched_yield();
        n = ::recv(m_fd.get(), buffer, size, 0);
      } while (n < 0 && errno == EAGAIN && Clock::now() < until);
      if (n > 0) {
        got = static_cast<std::size_t>(n);
        return Io::data;
      }
      if (n == 0) return Io::closed;
      if (errno != EAGAIN && errno != EINTR) return fail(errno_message("connection lost", errno));
    }
    int ready = wait(wants_write, deadline, wake_fd);
    if (ready == 0) return Io::timeout;
    if (ready == -1) return Io::woken;
    if (ready == -2) return Io::error;
  }
}

} // namespace dlock::net
