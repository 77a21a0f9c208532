#include "backend/etcd/gateway.hpp"
#include "backend/etcd/watch.hpp"
#include "loopback_listener.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <atomic>
#include <mutex>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dlock::backend::etcd;
using namespace std::chrono_literals;

namespace {

// A stand-in for etcd's /v3/watch on a loopback port: for each connection
// in turn it reads the request, keeps its body, and answers with a chunked
// stream of the given lines, then closes the connection (a broken stream)
// unless it is the last one, which stays open until the test ends.
class FakeWatchServer {
public:
  explicit FakeWatchServer(std::vector<std::vector<std::string>> answers) : m_answers(std::move(answers)) {
    m_thread = std::thread([this] { serve(); });
  }
  ~FakeWatchServer() {
    m_listener.shutdown();
    if (m_last >= 0) ::shutdown(m_last, SHUT_RDWR);
    m_thread.join();
    if (m_last >= 0) ::close(m_last);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(m_listener.port); }
  // The request bodies received so far (read once the server is done).
  std::vector<std::string> bodies() const {
    std::lock_guard<std::mutex> hold(m_mutex);
    return m_bodies;
  }

private:
  void serve() {
    for (std::size_t i = 0; i < m_answers.size(); ++i) {
      int fd = ::accept4(m_listener.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      std::string body = read_request(fd);
      {
        std::lock_guard<std::mutex> hold(m_mutex);
        m_bodies.push_back(std::move(body));
      }
      std::string out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
      for (const auto &line : m_answers[i]) {
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", line.size() + 1);
        out += size + line + "\n\r\n";
      }
      (void)!::write(fd, out.data(), out.size());
      if (i + 1 < m_answers.size()) {
        ::close(fd);
      } else {
        m_last = fd;
      }
    }
  }
  static std::string read_request(int fd) {
    std::string in;
    char buffer[4096];
    std::size_t head_end = std::string::npos, length = 0;
    for (;;) {
      if (head_end == std::string::npos && (head_end = in.find("\r\n\r\n")) != std::string::npos) {
        auto at = in.find("Content-Length: ");
        length = at < head_end ? std::stoul(in.substr(at + 16)) : 0;
      }
      if (head_end != std::string::npos && in.size() >= head_end + 4 + length) return in.substr(head_end + 4, length);
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return in;
      in.append(buffer, static_cast<std::size_t>(n));
    }
  }

  std::vector<std::vector<std::string>> m_answers;
  mutable std::mutex m_mutex;
  std::vector<std::string> m_bodies; // guarded by m_mutex
  dlock::test::LoopbackListener m_listener{4};
  std::atomic<int> m_last{-1}; // set by the server thread, read by the destructor before the join
  std::thread m_thread;
};

// Events until `count` arrived or `patience` passed.
std::vector<WatchEvent> wait_for(Watch &watch, std::size_t count, dlock::Millis patience = 3s) {
  std::vector<WatchEvent> events;
  auto until = SteadyClock::now() + patience;
  while (events.size() < count && SteadyClock::now() < until) {
    auto more = watch.wait(until, -1);
    events.insert(events.end(), more.begin(), more.end());
  }
  return events;
}

} // namespace

TEST_CASE("a watch reports puts and deletes, resumes a broken stream after the last revision, and says compacted") {
  const std::string created = R"({"result":{"header":{"revision":"6"},"created":true}})";
  // "aw==" is the key "k".
  FakeWatchServer server({
      {created, R"({"result":{"events":[{"kv":{"key":"aw==","mod_revision":"7"}}]}})",
       R"({"result":{"events":[{"type":"DELETE","kv":{"key":"aw==","mod_revision":"9"}}]}})"},
      {R"({"result":{"canceled":true,"compact_revision":"12"}})"},
      {created},
  });
  GatewayOptions options;
  options.endpoints = {server.endpoint()};
  options.label = server.endpoint();
  Gateway gateway(options);
  Watch watch(gateway);
  watch.open("k", 5);

  auto events = wait_for(watch, 2);
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == WatchEvent::Kind::put);
  CHECK(events[0].key == "k");
  CHECK(events[0].mod_revision == 7);
  CHECK(events[1].kind == WatchEvent::Kind::deleted);
  CHECK(events[1].mod_revision == 9);

  // The stream broke: the watch opens it again after revision 9, and etcd
  // answers that the history from there is gone.
  events = wait_for(watch, 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == WatchEvent::Kind::compacted);

  // From the compaction on: the third stream stays open.
  CHECK(wait_for(watch, 1, 300ms).empty());
  CHECK(watch.fd() >= 0);
  watch.stop();
  CHECK(watch.fd() == -1);
  auto bodies = server.bodies();
  REQUIRE(bodies.size() == 3);
  CHECK(bodies[0].find(R"("start_revision":"5")") != std::string::npos);
  CHECK(bodies[1].find(R"("start_revision":"10")") != std::string::npos);
  CHECK(bodies[2].find(R"("start_revision":"12")") != std::string::npos);
  CHECK(bodies[0].find(R"("key":"aw==")") != std::string::npos);
}
