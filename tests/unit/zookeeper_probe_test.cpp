#include "backend/zookeeper/four_letter.hpp"
#include "loopback_listener.hpp"
#include "net/net.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <poll.h>
#include <thread>
#include <unistd.h>

using namespace dlock;
using namespace std::chrono_literals;

namespace {

// A loopback listener standing in for a ZooKeeper server at its
// maxClientCnxns: it closes each connection unread `latency` after it
// arrived (a loaded server's accept thread is that late), or, with
// close_them false, keeps it open unread, as a server does that waits for
// the handshake.
class SlowRefuser {
public:
  SlowRefuser(std::chrono::milliseconds latency, bool close_them) : m_latency(latency), m_close(close_them) {
    m_thread = std::thread([this] { serve(); });
  }
  ~SlowRefuser() {
    m_stop = true;
    m_listener.shutdown();
    m_thread.join();
  }
  net::Address address() const { return net::parse_address("127.0.0.1:" + std::to_string(m_listener.port), 2181); }

private:
  void serve() {
    std::vector<std::pair<int, std::chrono::steady_clock::time_point>> open;
    while (!m_stop) {
      auto now = std::chrono::steady_clock::now();
      for (auto it = open.begin(); it != open.end();) {
        if (m_close && it->second <= now) {
          ::close(it->first);
          it = open.erase(it);
        } else {
          ++it;
        }
      }
      pollfd item{m_listener.fd, POLLIN, 0};
      if (::poll(&item, 1, 10) > 0) {
        int fd = ::accept4(m_listener.fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) break;
        open.emplace_back(fd, std::chrono::steady_clock::now() + m_latency);
      }
    }
    for (auto &[fd, when] : open)
      ::close(fd);
  }
  std::chrono::milliseconds m_latency;
  bool m_close;
  test::LoopbackListener m_listener{64};
  std::atomic<bool> m_stop{false};
  std::thread m_thread;
};

// A probe of one server, watched for `wait`: the server if it closed one.
std::string closing_within(const net::Address &server, Millis wait) {
  backend::zookeeper::ClosingProbe probe({server});
  return probe.watch(std::chrono::steady_clock::now() + wait);
}

} // namespace

TEST_CASE("a server that closes new connections unread is found even when it is slower than a probe round",
          "[zookeeper]") {
  // 400ms is more than one 250ms round: a probe given up at the end of its
  // round was never seen closed (CI, under load, said "the server closed
  // each connection" instead of naming maxClientCnxns).
  SlowRefuser server(400ms, true);
  auto address = server.address();
  CHECK(closing_within(address, Millis(1500)) == address.display());
}

TEST_CASE("a probe started at the first close hears of a server too slow for a second's probe at the deadline",
          "[zookeeper]") {
  // As the session's wait does: the probe starts when the client first
  // sees a close, is looked at while the client tries again (1s of
  // --connect-timeout), then gets one second more. The server closes 1.5s
  // after a connection arrives: a probe begun only at the deadline would
  // end before that.
  SlowRefuser server(1500ms, true);
  auto address = server.address();
  backend::zookeeper::ClosingProbe probe({address});
  auto deadline = std::chrono::steady_clock::now() + 1s;
  while (std::chrono::steady_clock::now() < deadline) {
    CHECK(probe.watch(std::chrono::steady_clock::now()).empty());
    std::this_thread::sleep_for(10ms);
  }
  CHECK(closing_within(address, Millis(300)).empty());
  CHECK(probe.watch(std::chrono::steady_clock::now() + 1s) == address.display());
}

TEST_CASE("a server that keeps new connections open is not said to close them", "[zookeeper]") {
  SlowRefuser server(10ms, false);
  auto started = std::chrono::steady_clock::now();
  CHECK(closing_within(server.address(), Millis(600)).empty());
  CHECK(std::chrono::steady_clock::now() - started < 2s);
}
