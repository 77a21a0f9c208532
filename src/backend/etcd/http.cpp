#include "backend/etcd/http.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <poll.h>
#include <string_view>

namespace dlock::backend::etcd {

namespace {

using Clock = std::chrono::steady_clock;

} // namespace

HttpConnection::HttpConnection(const std::string &endpoint, const net::TlsOptions &tls, Millis connect_timeout)
    : m_tls_options(tls), m_connect_timeout(connect_timeout), m_where(fmt::format("etcd at {}", endpoint)) {
  std::string_view rest = endpoint;
  bool https = rest.starts_with("https://");
  if (!https && !rest.starts_with("http://"))
    throw ConfigError(fmt::format("bad etcd endpoint '{}': not http:// or https://", endpoint));
  rest.remove_prefix(https ? 8 : 7);
  if (rest.ends_with('/')) rest.remove_suffix(1);
  m_address = net::parse_address(std::string(rest), https ? 443 : 80);
  m_host = m_address.display();
  m_tls_options.enabled = https;
}

HttpConnection::~HttpConnection() { close(); }

void HttpConnection::close() {
  m_stream.close();
  m_in.clear();
  m_busy = m_reused = m_fresh = false;
}

void HttpConnection::fail(const std::string &message) {
  close();
  throw UnavailableError(fmt::format("{}: {}", m_where, message));
}

void HttpConnection::lost(const std::string &message) {
  if (m_fresh) throw Stale{};
  fail(message);
}

void HttpConnection::connect(Deadline deadline) {
  close();
  Deadline until = std::min(deadline, Clock::now() + m_connect_timeout);
  m_stream.connect(m_address, m_tls_options, until, m_where, m_connect_timeout);
}

void HttpConnection::write_all(const std::string &bytes, Deadline deadline) {
  switch (m_stream.write_all(bytes, deadline)) {
  case net::Io::data:
    return;
  case net::Io::timeout:
    fail("no progress sending before the deadline");
  default:
    lost(m_stream.error());
  }
}

// No spinning for the answer as redis::Connection does: etcd takes most
// of a millisecond through its gateway, and a spinning client only slowed
// it down (measured: 1.2 ms a range instead of 0.8).
template <typename Complete>
int HttpConnection::fill(std::size_t limit, Deadline deadline, int wake_fd, Complete &&complete) {
  switch (m_stream.read_bounded(limit, deadline, wake_fd, [&](const char *bytes, std::size_t size) {
    m_in.append(bytes, size);
    m_fresh = false;
    return complete();
  })) {
  case net::Io::data:
    return 1;
  case net::Io::closed:
    return 0;
  case net::Io::woken:
    return -1;
  case net::Io::timeout:
    return -2;
  case net::Io::error:
    break;
  }
  lost(m_stream.error());
}

int HttpConnection::read_head(Deadline deadline, int wake_fd) {
  for (;;) {
    std::optional<http::Head> head;
    try {
      head = http::parse_head(m_in);
    } catch (const http::FramingError &error) {
      fail(error.what());
    }
    if (!head) {
      int got = fill(http::k_max_head - m_in.size(), deadline, wake_fd,
                     [this] { return m_in.find("\r\n\r\n") != std::string::npos || m_in.size() >= http::k_max_head; });
      if (got == 0) lost("connection closed by the server");
      if (got < 0) {
        if (m_in.size() >= http::k_max_head) fail("response headers too long");
        return got;
      }
      continue;
    }
    m_in.erase(0, head->size);
    if (head->status < 200 && head->status != 101) continue; // 100 Continue and the like: the answer follows
    m_keep = head->keep;
    m_date = head->date;
    m_body = http::BodyDecoder(*head);
    return head->status;
  }
}

bool HttpConnection::decode(std::string &out) {
  try {
    return m_body.decode(m_in, out);
  } catch (const http::FramingError &error) {
    fail(error.what());
  }
}

int HttpConnection::exchange(const std::string &request, Deadline deadline, int wake_fd) {
  if (!m_stream.is_open()) connect(deadline);
  m_fresh = m_reused; // only a kept-alive connection may turn out stale
  m_busy = true;
  write_all(request, deadline);
  return read_head(deadline, wake_fd);
}

int HttpConnection::start(const std::string &path, const std::string &body, const std::vector<std::string> &headers,
                          Deadline deadline, int wake_fd) {
  std::string request = fmt::format("POST {} HTTP/1.1\r\nHost: {}\r\nConnection: keep-alive\r\n"
                                    "Content-Type: application/json\r\nContent-Length: {}\r\n",
                                    path, m_host, body.size());
  for (const std::string &header : headers)
    request.append(header).append("\r\n");
  request.append("\r\n").append(body);
  if (m_stream.is_open()) {
    // A connection the server has shut is not worth a write.
    pollfd item{m_stream.fd(), POLLRDHUP, 0};
    if (m_busy || !m_in.empty() || (poll(&item, 1, 0) > 0 && item.revents)) close();
  }
  try {
    return exchange(request, deadline, wake_fd);
  } catch (const Stale &) {
    close();
    return exchange(request, deadline, wake_fd);
  }
}

std::optional<HttpResponse> HttpConnection::post(const std::string &path, const std::string &body,
                                                 const std::vector<std::string> &headers, Deadline deadline,
                                                 int interrupt_fd) {
  if (interrupt_fd >= 0) { // already interrupted: send nothing
    pollfd item{interrupt_fd, POLLIN, 0};
    if (poll(&item, 1, 0) > 0) return std::nullopt;
  }
  auto started = Clock::now();
  HttpResponse response;
  int got = response.status = start(path, body, headers, deadline, interrupt_fd);
  response.date = m_date;
  if (got > 0 && !decode(response.body)) {
    // The body: at most k_max_reply bytes, by the deadline.
    auto complete = [&] {
      if (response.body.size() >= net::k_max_reply) fail(net::too_large_message(net::k_max_reply));
      return decode(response.body);
    };
    if (m_body.framing() == http::Framing::length && m_body.left() >= net::k_max_reply)
      fail(net::too_large_message(net::k_max_reply));
    got = fill(net::k_max_reply + http::k_max_head, deadline, interrupt_fd, complete);
    if (got == 0 && m_body.framing() != http::Framing::until_close)
      fail("connection closed in the middle of an answer");
    if (got == -2 && response.body.size() + m_in.size() >= net::k_max_reply)
      fail(net::too_large_message(net::k_max_reply));
  }
  if (got == -1) {
    close();
    return std::nullopt;
  }
  if (got == -2) {
    fail(fmt::format("no answer within {}", format_duration(std::chrono::round<Millis>(Clock::now() - started))));
  }
  m_busy = false;
  m_reused = true;
  if (!m_keep) close();
  return response;
}

int HttpConnection::open_stream(const std::string &path, const std::string &body,
                                const std::vector<std::string> &headers, Deadline deadline) {
  auto started = Clock::now();
  int status = start(path, body, headers, deadline, -1);
  if (status < 0)
    fail(fmt::format("no answer within {}", format_duration(std::chrono::round<Millis>(Clock::now() - started))));
  return status;
}

bool HttpConnection::read_stream(std::string &out, Deadline until, int wake_fd) {
  if (!m_stream.is_open()) return false;
  std::size_t before = out.size();
  try {
    bool ended = false;
    auto progress = [&] {
      ended = decode(out);
      return ended || out.size() > before;
    };
    if (!progress()) {
      int got = fill(http::k_max_head, until, wake_fd, progress);
      if (got == 0) {
        close();
        return false;
      }
    }
    if (ended) {
      close();
      return out.size() > before;
    }
    if (out.size() > net::k_max_reply) { // an event never ends
      close();
      return false;
    }
    return true;
  } catch (const Error &) {
    close();
    return false;
  }
}

} // namespace dlock::backend::etcd
