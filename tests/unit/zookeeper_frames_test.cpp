#include "backend/zookeeper/frame_limit.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

extern "C" ssize_t dlock_zk_recv(int fd, void *buffer, size_t size, int flags);

using dlock::backend::zookeeper::FrameReader;

namespace {

std::string frame(std::uint32_t length, std::size_t body) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8)
    out += static_cast<char>((length >> shift) & 0xff);
  out.append(body, 'x');
  return out;
}

bool take(FrameReader &reader, const std::string &bytes) {
  return reader.take(reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size());
}

} // namespace

TEST_CASE("zookeeper frames: lengths up to the limit pass in any pieces", "[zookeeper]") {
  std::string stream = frame(36, 36) + frame(0, 0) + frame(1000, 1000) + frame(64, 64);
  for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{5}, std::size_t{4096}}) {
    FrameReader reader(1000);
    for (std::size_t at = 0; at < stream.size(); at += piece)
      REQUIRE(take(reader, stream.substr(at, piece)));
  }
}

TEST_CASE("zookeeper frames: a length over the limit or negative is refused, and so is all after it", "[zookeeper]") {
  FrameReader over(1000);
  REQUIRE(take(over, frame(10, 10)));
  REQUIRE(take(over, frame(1001, 0).substr(0, 3)));
  REQUIRE_FALSE(take(over, frame(1001, 0).substr(3)));
  CHECK(over.refused_length() == 1001);
  CHECK_FALSE(take(over, frame(1, 1)));

  FrameReader negative(1000);
  REQUIRE_FALSE(take(negative, frame(0xFFFFFFFF, 0)));
  CHECK(negative.refused_length() == -1);

  // The length of a frame's body is never read as a length.
  FrameReader body(1000);
  CHECK(take(body, frame(8, 0) + frame(0x7FFFFFFF, 0) + frame(0xFFFFFFFF, 0) + frame(4, 4)));
}

TEST_CASE("zookeeper frames: the client's reads fail before it sees an oversized length", "[zookeeper]") {
  int pair[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  dlock::backend::zookeeper::clear_frame_refusal();
  std::string stream = frame(16, 16) + frame(0x7FFFFFFF, 64);
  REQUIRE(::write(pair[1], stream.data(), stream.size()) == static_cast<ssize_t>(stream.size()));
  char buffer[4];
  // The first frame, read as the client does: length, then body.
  REQUIRE(dlock_zk_recv(pair[0], buffer, 4, 0) == 4);
  char body[16];
  REQUIRE(dlock_zk_recv(pair[0], body, sizeof body, 0) == 16);
  errno = 0;
  CHECK(dlock_zk_recv(pair[0], buffer, 4, 0) == -1);
  CHECK(errno == EMSGSIZE);
  CHECK(dlock::backend::zookeeper::last_frame_refusal().find("2147483647 bytes, over the 8 MiB limit") !=
        std::string::npos);
  // And every read after it on that connection.
  CHECK(dlock_zk_recv(pair[0], body, sizeof body, 0) == -1);
  ::close(pair[0]);
  ::close(pair[1]);
}
