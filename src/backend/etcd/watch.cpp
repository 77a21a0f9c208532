#include "backend/etcd/watch.hpp"

#include "core/log.hpp"

#include <algorithm>
#include <poll.h>

namespace dlock::backend::etcd {

namespace {

long millis_left(SteadyClock::time_point until) {
  auto left = std::chrono::ceil<Millis>(until - SteadyClock::now()).count();
  return std::max<long>(1, static_cast<long>(left));
}

bool readable(int fd) {
  if (fd < 0) return false;
  pollfd item{fd, POLLIN, 0};
  return ::poll(&item, 1, 0) > 0 && (item.revents & POLLIN);
}

} // namespace

void Watch::open(const std::string &key, std::int64_t start_revision, std::optional<SteadyClock::time_point> by) {
  stop();
  m_key = key;
  m_range_end.reset();
  m_next_revision = start_revision;
  m_failures = 0;
  start_stream(by);
}

void Watch::open_deletions(const std::string &key, const std::string &range_end, std::int64_t start_revision) {
  stop();
  m_key = key;
  m_range_end = range_end;
  m_next_revision = start_revision;
  m_failures = 0;
  start_stream();
}

void Watch::follow(const std::string &key, std::int64_t start_revision, SteadyClock::time_point by) {
  if (m_key != key || m_range_end) {
    open(key, start_revision, by);
  } else if (!m_open || m_endpoint != m_gateway.current_endpoint()) {
    m_failures = 0;
    start_stream(by);
  } else {
    return;
  }
  // etcd confirms a new watch with a message of its own: take it now, so
  // that the stream's descriptor turns readable only for what follows.
  while (m_open && m_buffer.find('\n') == std::string::npos && SteadyClock::now() < by) {
    if (!m_stream->read_stream(m_buffer, by, -1)) m_open = false;
  }
  if (!m_open) m_stream.reset();
}

void Watch::stop() {
  m_key.reset();
  m_range_end.reset();
  m_stream.reset();
  m_open = false;
  m_buffer.clear();
}

std::vector<WatchEvent> Watch::poll() {
  std::vector<WatchEvent> events;
  if (!m_key) return events;
  if (m_open) {
    // Everything there is now: each read takes what one recv gives.
    for (std::size_t before = ~std::size_t{0}; m_buffer.size() != before;) {
      before = m_buffer.size();
      if (!m_stream->read_stream(m_buffer, SteadyClock::now(), -1)) {
        m_open = false;
        break;
      }
    }
  }
  take_lines(events);
  if (!m_open) m_stream.reset();
  return events;
}

std::vector<WatchEvent> Watch::wait(SteadyClock::time_point until, int interrupt_fd) {
  std::vector<WatchEvent> events;
  if (!m_key) return events;
  auto next_open = SteadyClock::time_point::min();
  for (;;) {
    take_lines(events);
    if (!events.empty()) return events;
    if (!m_open) {
      // The stream ended (member down or stopping) or never opened: open
      // it again from the next revision, on the next endpoint, at most
      // every 100ms.
      auto now = SteadyClock::now();
      if (now < next_open) {
        pollfd item{interrupt_fd, POLLIN, 0};
        ::poll(&item, interrupt_fd >= 0 ? 1 : 0, static_cast<int>(millis_left(std::min(until, next_open))));
      } else {
        next_open = now + Millis(100);
        if (m_stream) ++m_failures;
        start_stream();
      }
    } else if (!m_stream->read_stream(m_buffer, until, interrupt_fd)) {
      m_open = false;
    }
    if (SteadyClock::now() >= until || readable(interrupt_fd)) {
      take_lines(events);
      return events;
    }
  }
}

void Watch::start_stream(std::optional<SteadyClock::time_point> by) {
  m_open = false;
  m_buffer.clear();
  const auto &endpoints = m_gateway.endpoints();
  std::size_t endpoint = (m_gateway.current_endpoint() + m_failures) % endpoints.size();
  m_endpoint = endpoint;
  Json create = {
      {"create_request", {{"key", base64_encode(*m_key)}, {"start_revision", std::to_string(m_next_revision)}}}};
  if (m_range_end) {
    create["create_request"]["range_end"] = base64_encode(*m_range_end);
    create["create_request"]["filters"] = Json::array({"NOPUT"});
  }
  auto deadline = by.value_or(SteadyClock::now() + m_gateway.timeout());
  try {
    std::vector<std::string> headers = m_gateway.stream_headers(endpoint, deadline);
    // A member cut off from its leader must end the watch, not keep it
    // open and silent.
    headers.push_back("Grpc-Metadata-hasleader: true");
    m_stream = m_gateway.connect(endpoint);
    int status = m_stream->open_stream("/v3/watch", create.dump(), headers, deadline);
    if (status == 200) {
      m_open = true;
      return;
    }
    if (status == 401) m_gateway.forget_token(endpoint);
    detail(2, "etcd watch on {}: HTTP status {}", endpoints[endpoint], status);
  } catch (const Error &failure) {
    if (failure.code() != ExitCode::unavailable) throw;
    detail(2, "etcd watch on {}: {}", endpoints[endpoint], failure.what());
  }
  m_stream.reset();
  ++m_failures;
}

void Watch::take_lines(std::vector<WatchEvent> &events) {
  std::size_t start = 0;
  for (std::size_t end; (end = m_buffer.find('\n', start)) != std::string::npos; start = end + 1) {
    WatchLine line = parse_watch_line(std::string_view(m_buffer).substr(start, end - start));
    switch (line.kind) {
    case WatchLine::Kind::error:
      // A stream-level error (leader lost, member stopping): open again.
      detail(2, "etcd watch: {}", line.error);
      if (line.error.find("invalid auth token") != std::string::npos) m_gateway.forget_token(m_endpoint);
      m_open = false;
      break;
    case WatchLine::Kind::canceled:
      if (line.compact_revision > 0) {
        // The history we asked for is gone: the caller must look again.
        events.push_back(WatchEvent{.kind = WatchEvent::Kind::compacted, .key = {}, .mod_revision = 0});
        m_next_revision = line.compact_revision;
      }
      m_open = false;
      break;
    case WatchLine::Kind::events:
      for (auto &event : line.events) {
        m_next_revision = std::max(m_next_revision, event.mod_revision + 1);
        events.push_back(std::move(event));
      }
      break;
    case WatchLine::Kind::other:
      break;
    }
  }
  m_buffer.erase(0, start);
}

} // namespace dlock::backend::etcd
