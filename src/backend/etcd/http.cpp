#include "backend/etcd/http.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <poll.h>
#include <string_view>

namespace dlock::backend::etcd {

namespace {

using Clock = std::chrono::steady_clock;

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

bool icontains(std::string_view text, std::string_view word) {
  for (std::size_t i = 0; i + word.size() <= text.size(); ++i)
    if (iequals(text.substr(i, word.size()), word)) return true;
  return false;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

constexpr std::size_t k_max_head = 65536;

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
    std::size_t end = m_in.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (m_in.size() >= k_max_head) fail("response headers too long");
      int got = fill(k_max_head - m_in.size(), deadline, wake_fd,
                     [this] { return m_in.find("\r\n\r\n") != std::string::npos; });
      if (got == 0) lost("connection closed by the server");
      if (got < 0) {
        if (m_in.size() >= k_max_head) fail("response headers too long");
        return got;
      }
      continue;
    }
    std::string_view head(m_in.data(), end + 2);
    std::size_t eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    int status = 0;
    if (!line.starts_with("HTTP/1.") || line.size() < 12 ||
        std::from_chars(line.data() + 9, line.data() + 12, status).ptr != line.data() + 12 || status < 100)
      fail(fmt::format("not an HTTP response: '{}'", line.substr(0, 80)));
    m_keep = line.starts_with("HTTP/1.1");
    bool chunked = false, has_length = false;
    m_left = 0;
    for (head.remove_prefix(eol + 2); !head.empty(); head.remove_prefix(eol + 2)) {
      eol = head.find("\r\n");
      line = head.substr(0, eol);
      std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
      if (iequals(name, "content-length")) {
        has_length =
            std::from_chars(value.data(), value.data() + value.size(), m_left).ptr == value.data() + value.size();
        if (!has_length) fail(fmt::format("bad Content-Length '{}'", value));
      } else if (iequals(name, "transfer-encoding")) {
        chunked = icontains(value, "chunked");
      } else if (iequals(name, "connection")) {
        if (icontains(value, "close"))
          m_keep = false;
        else if (icontains(value, "keep-alive"))
          m_keep = true;
      }
    }
    m_in.erase(0, end + 4);
    if (status < 200 && status != 101) continue; // 100 Continue and the like: the answer follows
    m_chunk = Chunk::size_line;
    if (chunked) {
      m_framing = Framing::chunked;
    } else if (has_length || status == 204 || status == 304) {
      m_framing = Framing::length;
    } else {
      m_framing = Framing::until_close;
      m_keep = false;
    }
    return status;
  }
}

bool HttpConnection::decode(std::string &out) {
  if (m_framing == Framing::until_close) {
    out += m_in;
    m_in.clear();
    return false;
  }
  std::size_t used = 0; // consumed bytes of m_in, erased once at the end
  bool complete = false;
  for (;;) {
    if (m_framing == Framing::length || m_chunk == Chunk::data) {
      std::size_t take = std::min(m_left, m_in.size() - used);
      out.append(m_in, used, take);
      used += take;
      m_left -= take;
      if (m_left > 0) break;
      if (m_framing == Framing::length) {
        complete = true;
        break;
      }
      m_chunk = Chunk::data_end;
    }
    std::size_t eol = m_in.find("\r\n", used);
    if (eol == std::string::npos) {
      if (m_in.size() - used > 4096) fail("malformed chunked response");
      break;
    }
    std::string_view line(m_in.data() + used, eol - used);
    used = eol + 2;
    if (m_chunk == Chunk::data_end) {
      if (!line.empty()) fail("malformed chunked response");
      m_chunk = Chunk::size_line;
    } else if (m_chunk == Chunk::size_line) {
      line = trim(line.substr(0, line.find(';')));
      auto parsed = std::from_chars(line.data(), line.data() + line.size(), m_left, 16);
      if (line.empty() || parsed.ptr != line.data() + line.size()) fail("malformed chunk size");
      m_chunk = m_left == 0 ? Chunk::trailer : Chunk::data;
    } else if (line.empty()) { // the blank line after the last chunk's trailers
      complete = true;
      break;
    }
  }
  m_in.erase(0, used);
  return complete;
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
  if (got > 0 && !decode(response.body)) {
    // The body: at most k_max_reply bytes, by the deadline.
    auto complete = [&] {
      if (response.body.size() >= net::k_max_reply) fail(net::too_large_message(net::k_max_reply));
      return decode(response.body);
    };
    if (m_framing == Framing::length && m_left >= net::k_max_reply) fail(net::too_large_message(net::k_max_reply));
    got = fill(net::k_max_reply + k_max_head, deadline, interrupt_fd, complete);
    if (got == 0 && m_framing != Framing::until_close) fail("connection closed in the middle of an answer");
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
      int got = fill(k_max_head, until, wake_fd, progress);
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
