#include "backend/redis/resp.hpp"
#include "core/error.hpp"
#include "net/stream.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <fcntl.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace dlock;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// A Stream over one end of a socketpair; the test writes to `peer`.
struct Pair {
  net::Stream stream;
  UniqueFd peer;
  Pair() {
    int fds[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    int flags = fcntl(fds[0], F_GETFL);
    fcntl(fds[0], F_SETFL, flags | O_NONBLOCK);
    stream.adopt(UniqueFd(fds[0]));
    peer.reset(fds[1]);
  }
};

auto discard = [](const char *, std::size_t) { return false; };

} // namespace

TEST_CASE("a size limit is named in KiB below 1 MiB (the four-letter words' 64 KiB), else in MiB") {
  // It said "reply larger than 0 MiB" for 64 KiB.
  CHECK(net::too_large_message(64u << 10) == "reply larger than 64 KiB: not a server dlock can talk to");
  CHECK(net::too_large_message(8u << 20) == "reply larger than 8 MiB: not a server dlock can talk to");
}

TEST_CASE("read_bounded stops at its byte limit") {
  Pair pair;
  std::string bytes(100000, 'x');
  std::thread writer([&] { (void)!::write(pair.peer.get(), bytes.data(), bytes.size()); });
  std::size_t total = 0;
  net::Io io = pair.stream.read_bounded(10000, Clock::now() + 2s, -1, [&](const char *, std::size_t size) {
    total += size;
    return false;
  });
  CHECK(io == net::Io::error);
  CHECK(total <= 10000);
  CHECK(pair.stream.error().find("reply larger than") != std::string::npos);
  pair.stream.close(); // unblocks the writer
  writer.join();
}

TEST_CASE("read_bounded ends by its deadline while bytes keep arriving") {
  Pair pair;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::string chunk(512, 'x');
    while (!stop && ::write(pair.peer.get(), chunk.data(), chunk.size()) > 0)
      std::this_thread::sleep_for(1ms);
  });
  auto started = Clock::now();
  net::Io io = pair.stream.read_bounded(net::k_max_reply, started + 200ms, -1, discard);
  auto took = Clock::now() - started;
  stop = true;
  pair.stream.close();
  writer.join();
  CHECK(io == net::Io::timeout);
  CHECK(took >= 200ms);
  CHECK(took < 1s);
}

TEST_CASE("read_some: a complete reply, a wake fd, a closed peer") {
  Pair pair;
  REQUIRE(::write(pair.peer.get(), "+OK\r\n", 5) == 5);
  std::string got;
  CHECK(pair.stream.read_bounded(100, Clock::now() + 1s, -1, [&](const char *data, std::size_t size) {
    got.append(data, size);
    return got.ends_with("\r\n");
  }) == net::Io::data);
  CHECK(got == "+OK\r\n");

  int wake[2];
  REQUIRE(pipe(wake) == 0);
  REQUIRE(::write(wake[1], "x", 1) == 1);
  CHECK(pair.stream.read_bounded(100, Clock::now() + 5s, wake[0], discard) == net::Io::woken);
  ::close(wake[0]);
  ::close(wake[1]);

  auto started = Clock::now();
  CHECK(pair.stream.read_bounded(100, started + 100ms, -1, discard) == net::Io::timeout);
  CHECK(Clock::now() - started >= 100ms);

  pair.peer.reset();
  CHECK(pair.stream.read_bounded(100, Clock::now() + 1s, -1, discard) == net::Io::closed);
}

TEST_CASE("the Redis reply parser: garbage, a value limit, the pending size") {
  using dlock::backend::redis::ReplyParser;
  ReplyParser parser;
  parser.feed("X garbage\r\n", 11);
  CHECK_THROWS_AS(parser.next(), UnavailableError);
  parser.reset();
  parser.feed("+OK\r\n$10\r\nabc", 13);
  CHECK(parser.next()->str == "OK");
  CHECK(!parser.next());
  CHECK(parser.pending() == 8);

  ReplyParser many;
  std::string array = "*100000\r\n";
  for (int i = 0; i < 100000; ++i)
    array += ":1\r\n";
  many.feed(array.data(), array.size());
  CHECK_THROWS_WITH(many.next(), Catch::Contains("more than"));

  ReplyParser nested; // the limit counts values of nested arrays too
  std::string outer = "*2\r\n*40000\r\n";
  for (int i = 0; i < 40000; ++i)
    outer += ":1\r\n";
  outer += "*40000\r\n";
  for (int i = 0; i < 40000; ++i)
    outer += ":1\r\n";
  nested.feed(outer.data(), outer.size());
  CHECK_THROWS_WITH(nested.next(), Catch::Contains("more than"));

  ReplyParser fine;
  std::string scan = "*2\r\n$1\r\n0\r\n*1000\r\n";
  for (int i = 0; i < 1000; ++i)
    scan += "$5\r\nkey:x\r\n";
  fine.feed(scan.data(), scan.size());
  auto reply = fine.next();
  REQUIRE(reply);
  CHECK(reply->elements.at(1).elements.size() == 1000);
}
