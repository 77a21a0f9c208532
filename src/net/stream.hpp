#pragma once

#include "core/duration.hpp"
#include "core/unique_fd.hpp"
#include "net/net.hpp"
#include "net/tls.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace dlock::net {

// The largest reply dlock accepts from a server, far above any legitimate
// one (a lock record is a few hundred bytes, a SCAN batch or an etcd range
// of every lock well under a megabyte). A server that sends more is broken
// or hostile: the round trip fails (69) instead of filling the memory.
inline constexpr std::size_t k_max_reply = 8u << 20;

// How a read or write ended.
enum class Io {
  data,    // bytes moved
  timeout, // the deadline passed first
  woken,   // `wake_fd` became readable first
  closed,  // the peer closed the connection
  error,   // an I/O or TLS error: see Stream::error()
};

// One client connection dlock owns, to any server of any backend: TCP or a
// unix socket, optionally TLS, non-blocking. Every wait is bounded by a
// deadline and can be cut short by a wake fd (a signal pipe). Backends
// frame their protocol on top of read_some() / read_bounded().
class Stream {
public:
  Stream() = default;
  ~Stream();
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  // Connects to `address` (its socket path if set, else TCP) by
  // `deadline`, then does the TLS handshake if `tls.enabled`. Throws
  // dlock::Error naming `where`: 69 when unreachable or too slow, 78 for
  // unusable settings. `timeout` is only quoted in messages.
  void connect(const Address &address, const TlsOptions &tls, Deadline deadline, const std::string &where,
               Millis timeout);
  // Takes over a connected socket (tests).
  void adopt(UniqueFd fd);
  void close();
  bool is_open() const { return static_cast<bool>(m_fd); }
  int fd() const { return m_fd.get(); }

  // Poll for a short while before sleeping in poll(2), for servers a few
  // microseconds away (see read_some). Off by default.
  void set_spin(bool spin) { m_spin = spin; }

  // True if the peer has closed its end (or the socket failed) while no
  // request was in flight: a server restarted since the last request.
  bool closed_by_peer() const;

  // Writes all of `bytes` by `deadline`: data, timeout or error.
  Io write_all(std::string_view bytes, Deadline deadline);

  // Reads what has arrived into `buffer` (at most `size` bytes, `got` set),
  // waiting for it until `deadline` or until `wake_fd` (when >= 0) is
  // readable. With the deadline already past it only takes what has
  // arrived, without waiting.
  Io read_some(char *buffer, std::size_t size, std::size_t &got, Deadline deadline, int wake_fd = -1);

  // Reads until `consume(bytes, size)` returns true (a reply is complete),
  // at most `limit` bytes, by `deadline`: the bounds every reply of every
  // backend is read with. The deadline holds even while bytes keep coming
  // (it is checked between reads, not only when none are waiting).
  // `consume` may throw (a protocol error). Returns data when complete,
  // timeout, woken, closed, error, or too_large() when `limit` is reached.
  template <typename Consume> Io read_bounded(std::size_t limit, Deadline deadline, int wake_fd, Consume &&consume) {
    char buffer[16384];
    std::size_t total = 0;
    for (bool first = true;; first = false) {
      if (!first && std::chrono::steady_clock::now() >= deadline) return Io::timeout;
      if (total >= limit) return too_large(limit);
      std::size_t got = 0;
      Io io = read_some(buffer, std::min(sizeof buffer, limit - total), got, deadline, wake_fd);
      if (io != Io::data) return io;
      total += got;
      if (consume(static_cast<const char *>(buffer), got)) return Io::data;
    }
  }

  // The message of the last Io::error (an errno or TLS reason).
  const std::string &error() const { return m_error; }

private:
  Io too_large(std::size_t limit);
  // 1: ready, 0: deadline, -1: woken, -2: poll failed (error()).
  int wait(bool for_write, Deadline deadline, int wake_fd);
  Io fail(std::string message);

  UniqueFd m_fd;
  std::unique_ptr<TlsSession> m_tls;
  bool m_spin = false;
  std::string m_error;
};

// "reply larger than 8 MiB" for messages.
std::string too_large_message(std::size_t limit);

} // namespace dlock::net
