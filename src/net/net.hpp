#pragma once

#include "core/duration.hpp"
#include "core/unique_fd.hpp"

#include <chrono>
#include <string>
#include <sys/socket.h>
#include <vector>

namespace dlock::net {

using Deadline = std::chrono::steady_clock::time_point;

// Where a server listens.
struct Address {
  std::string host; // empty for a unix socket
  int port = 0;
  std::string socket_path;

  // "host:port" (IPv6 in brackets) or the socket path, for messages.
  std::string display() const;
};

// "host", "host:port", "[v6]", "[v6]:port" as written in a URL; throws
// ConfigError (78) on a malformed one.
Address parse_address(const std::string &text, int default_port);

// One socket address a host stands for.
struct Endpoint {
  sockaddr_storage address{};
  socklen_t length = 0;
  // "ip:port" (IPv6 in brackets), for messages.
  std::string display() const;
};

// The addresses `address` (a host and port, not a socket path) stands
// for. Host names are resolved with getaddrinfo_a, so a hanging resolver
// is bounded by `deadline`; numeric addresses never ask a resolver.
// Throws UnavailableError (69) naming `where`.
std::vector<Endpoint> resolve(const Address &address, Deadline deadline, const std::string &where);

// A non-blocking TCP connection (TCP_NODELAY, close-on-exec) to the first
// address of `address` that accepts one before `deadline`. Host names are
// resolved with getaddrinfo_a, so a hanging resolver is bounded too;
// numeric addresses never ask a resolver. Throws UnavailableError (69)
// naming `where`; `timeout` is only quoted in the message.
UniqueFd connect_tcp(const Address &address, Deadline deadline, const std::string &where, Millis timeout);

// Milliseconds left until `deadline` for poll(2): 0 when past, capped at ten minutes.
int millis_until(Deadline deadline);

} // namespace dlock::net
