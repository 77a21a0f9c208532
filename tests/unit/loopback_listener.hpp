#pragma once

// A listening TCP socket on 127.0.0.1 at a port the kernel picks, for
// unit tests that stand in for a server.

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dlock::test {

struct LoopbackListener {
  int fd = -1;
  int port = 0;

  explicit LoopbackListener(int backlog) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd, backlog) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0);
    port = ntohs(address.sin_port);
  }
  ~LoopbackListener() { ::close(fd); }
  LoopbackListener(const LoopbackListener &) = delete;
  LoopbackListener &operator=(const LoopbackListener &) = delete;

  // Wakes a thread blocked in accept(2) on it (accept then fails).
  void shutdown() const { ::shutdown(fd, SHUT_RDWR); }
};

} // namespace dlock::test
