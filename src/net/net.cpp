#include "net/net.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <vector>

namespace dlock::net {

int millis_until(Deadline deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  if (left <= 0) return 0;
  return left > 600'000 ? 600'000 : static_cast<int>(left);
}

std::string Endpoint::display() const {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (address.ss_family == AF_INET) {
    const auto *v4 = reinterpret_cast<const sockaddr_in *>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    port = ntohs(v4->sin_port);
    return fmt::format("{}:{}", host, port);
  }
  if (address.ss_family == AF_INET6) {
    const auto *v6 = reinterpret_cast<const sockaddr_in6 *>(&address);
    inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    port = ntohs(v6->sin6_port);
  }
  return fmt::format("[{}]:{}", host, port);
}

// Host names are resolved with getaddrinfo_a so that a hanging resolver is
// bounded by the connect timeout like everything else; numeric addresses
// (the common case in configs) skip the resolver entirely.
std::vector<Endpoint> resolve(const Address &address, Deadline deadline, const std::string &where) {
  std::vector<Endpoint> out;
  auto take = [&out](const addrinfo *list) {
    for (const addrinfo *item = list; item; item = item->ai_next) {
      Endpoint entry;
      std::memcpy(&entry.address, item->ai_addr, item->ai_addrlen);
      entry.length = item->ai_addrlen;
      out.push_back(entry);
    }
  };
  std::string port = std::to_string(address.port);
  addrinfo numeric_hints{};
  numeric_hints.ai_socktype = SOCK_STREAM;
  numeric_hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV; // never asks a resolver
  if (addrinfo *numeric = nullptr; getaddrinfo(address.host.c_str(), port.c_str(), &numeric_hints, &numeric) == 0) {
    take(numeric);
    freeaddrinfo(numeric);
    return out;
  }
  // The request outlives this call if the resolver hangs past the deadline
  // (it cannot always be cancelled), so it lives on the heap and is only
  // freed once finished.
  struct Request {
    std::string host, port;
    addrinfo hints{};
    gaicb control{};
  };
  auto *request = new Request{address.host, port, {}, {}};
  request->hints.ai_socktype = SOCK_STREAM;
  request->hints.ai_flags = AI_ADDRCONFIG;
  request->control.ar_name = request->host.c_str();
  request->control.ar_service = request->port.c_str();
  request->control.ar_request = &request->hints;
  gaicb *list[] = {&request->control};
  if (getaddrinfo_a(GAI_NOWAIT, list, 1, nullptr) != 0) {
    delete request;
    throw UnavailableError(fmt::format("cannot resolve {}", where));
  }
  int status = EAI_INPROGRESS;
  while ((status = gai_error(&request->control)) == EAI_INPROGRESS) {
    int left = millis_until(deadline);
    if (left == 0) break;
    timespec wait{left / 1000, (left % 1000) * 1'000'000L};
    const gaicb *pending[] = {&request->control};
    gai_suspend(pending, 1, &wait);
  }
  if (status == EAI_INPROGRESS) {
    if (gai_cancel(&request->control) == EAI_CANCELED) delete request; // else: leaked on purpose, still in use
    throw UnavailableError(fmt::format("cannot resolve {}: no answer from the resolver in time", where));
  }
  if (status != 0) {
    delete request;
    throw UnavailableError(fmt::format("cannot resolve {}: {}", where, gai_strerror(status)));
  }
  take(request->control.ar_result);
  freeaddrinfo(request->control.ar_result);
  delete request;
  return out;
}

std::string Address::display() const {
  if (!socket_path.empty()) return socket_path;
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Address parse_address(const std::string &text, int default_port) {
  Address address;
  address.port = default_port;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos) throw ConfigError(fmt::format("bad address '{}': missing ']'", text));
    address.host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') throw ConfigError(fmt::format("bad address '{}'", text));
      port = text.substr(close + 2);
    }
  } else {
    auto colon = text.rfind(':');
    // "::1" or "fe80::1:6379" cannot be split into host and port
    // unambiguously: an IPv6 address goes in brackets, as in URLs.
    if (colon != std::string::npos && text.find(':') != colon)
      throw ConfigError(fmt::format("bad address '{}': an IPv6 address goes in brackets ([{}])", text, text));
    address.host = text.substr(0, colon);
    if (colon != std::string::npos) port = text.substr(colon + 1);
  }
  if (address.host.empty()) throw ConfigError(fmt::format("bad address '{}': no host", text));
  if (!port.empty()) {
    int value = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || value > 65535) throw ConfigError(fmt::format("bad port in '{}'", text));
      value = value * 10 + (c - '0');
    }
    if (value < 1 || value > 65535) throw ConfigError(fmt::format("bad port in '{}'", text));
    address.port = value;
  }
  return address;
}

UniqueFd connect_tcp(const Address &address, Deadline deadline, const std::string &where, Millis timeout) {
  std::string last_error = "no address";
  for (const Endpoint &target : resolve(address, deadline, where)) {
    UniqueFd fd(socket(target.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throw UnavailableError(errno_message("socket", errno));
    int error = 0;
    if (::connect(fd.get(), reinterpret_cast<const sockaddr *>(&target.address), target.length) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        pollfd item{fd.get(), POLLOUT, 0};
        int ready = 0;
        while ((ready = poll(&item, 1, millis_until(deadline))) < 0 && errno == EINTR) {
        }
        if (ready <= 0)
          throw UnavailableError(
              fmt::format("cannot connect to {}: no connection within {}", where, format_duration(timeout)));
        socklen_t length = sizeof error;
        getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
      }
    }
    if (error == 0) {
      int on = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      return fd;
    }
    last_error = std::strerror(error);
  }
  throw UnavailableError(fmt::format("cannot connect to {}: {}", where, last_error));
}

} // namespace dlock::net
