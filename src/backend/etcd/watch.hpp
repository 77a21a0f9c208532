#pragma once

#include "backend/etcd/gateway.hpp"
#include "backend/etcd/http.hpp"
#include "backend/etcd/reply.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dlock::backend::etcd {

// A watch on one key from a revision: etcd's answer to POST /v3/watch,
// which never ends, one JSON object per line, on a connection of its own.
// It survives its stream: one that breaks (a member down, stopping or cut
// off from its leader) is opened again from the revision after the last
// one seen, on the next endpoint, so no event is lost or seen twice. When
// that history is gone (compacted), a `compacted` event says so.
class Watch {
public:
  explicit Watch(Gateway &gateway) : m_gateway(gateway) {}
  Watch(const Watch &) = delete;
  Watch &operator=(const Watch &) = delete;

  // Starts watching `key` for changes from `start_revision` on; replaces
  // any earlier watch. Opening it may take until `by` (default: the
  // gateway's request timeout).
  void open(const std::string &key, std::int64_t start_revision,
            std::optional<SteadyClock::time_point> by = std::nullopt);
  // The same for deletions of any key in [key, range_end): a semaphore's
  // first waiter watches its holders so (puts, waiters joining, are
  // filtered out by etcd).
  void open_deletions(const std::string &key, const std::string &range_end, std::int64_t start_revision);
  // Keeps a watch on `key` open on the endpoint that answered the
  // gateway's last request: opens it (from `start_revision`) if the watch
  // is on another key, or reopens it there, from the last revision seen,
  // if its stream ended or it is on another endpoint. A failure leaves no
  // stream open (fd() -1) until the next call.
  void follow(const std::string &key, std::int64_t start_revision, SteadyClock::time_point by);
  void stop();

  // The open stream's descriptor (readable when etcd sent something on
  // it), or -1.
  int fd() const { return m_open && m_stream ? m_stream->fd() : -1; }
  // Events that have already arrived, without waiting; a stream found
  // ended is marked closed.
  std::vector<WatchEvent> poll();
  // Waits until the watch delivers events (returned), `until` passes or
  // `interrupt_fd` is readable (both: empty). A broken stream is opened
  // again on the next endpoint from the last revision seen, at most every
  // 100 ms.
  std::vector<WatchEvent> wait(SteadyClock::time_point until, int interrupt_fd);

private:
  void start_stream(std::optional<SteadyClock::time_point> by = std::nullopt);
  void take_lines(std::vector<WatchEvent> &events);

  Gateway &m_gateway;
  std::optional<std::string> m_key;       // none: nothing watched
  std::optional<std::string> m_range_end; // a range of keys, deletions only
  std::int64_t m_next_revision = 0;       // where the stream resumes
  std::unique_ptr<HttpConnection> m_stream;
  std::size_t m_endpoint = 0; // the stream's
  bool m_open = false;
  std::string m_buffer;       // bytes of a line not complete yet
  std::size_t m_failures = 0; // streams that failed in a row: the next goes to another endpoint
};

} // namespace dlock::backend::etcd
