#pragma once

#include "backend/etcd/http_framing.hpp"
#include "core/duration.hpp"
#include "net/net.hpp"
#include "net/stream.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// A small HTTP/1.1 client for etcd's JSON gateway: one keep-alive
// connection to one endpoint, plain or TLS (net::Stream), POST only.
// Heads are read up to 64 KiB, bodies up to net::k_max_reply, each round
// trip by its deadline even while bytes keep arriving.
// (libcurl, tried first, cost more to load than the rest of a dlock run.)
namespace dlock::backend::etcd {

struct HttpResponse {
  int status = 0;
  std::string body;
  std::optional<std::int64_t> date; // the server's Date header (seconds since the epoch)
};

class HttpConnection {
public:
  using Deadline = net::Deadline;

  // `endpoint`: "http://host:port" or "https://host:port" (IPv6 in
  // brackets); throws ConfigError (78) on another. Connects lazily.
  HttpConnection(const std::string &endpoint, const net::TlsOptions &tls, Millis connect_timeout);
  ~HttpConnection();
  HttpConnection(const HttpConnection &) = delete;
  HttpConnection &operator=(const HttpConnection &) = delete;

  // POSTs `body` (JSON) with the extra `headers` ("Name: value") and reads
  // the whole answer. Connects first if needed; a kept-alive connection the
  // server closed before answering is opened again and the request sent
  // once more. nullopt when `interrupt_fd` (>= 0) became readable first;
  // UnavailableError (69) when `deadline` passes. Either way a connection
  // with a request in flight is closed.
  std::optional<HttpResponse> post(const std::string &path, const std::string &body,
                                   const std::vector<std::string> &headers, Deadline deadline, int interrupt_fd = -1);

  // A response that does not end (etcd's /v3/watch): sends the POST, reads
  // the status line and headers by `deadline` and returns the status.
  int open_stream(const std::string &path, const std::string &body, const std::vector<std::string> &headers,
                  Deadline deadline);
  // Appends the body bytes that arrive (chunk framing removed) to `out`:
  // waits until some did, `until` passes or `wake_fd` is readable. false
  // once the stream has ended (closed, last chunk, error); the connection
  // is closed then.
  bool read_stream(std::string &out, Deadline until, int wake_fd);

  void close();
  int fd() const { return m_stream.fd(); }

private:
  struct Stale {}; // a kept-alive connection found closed: send again

  void connect(Deadline deadline);
  int start(const std::string &path, const std::string &body, const std::vector<std::string> &headers,
            Deadline deadline, int wake_fd);
  int exchange(const std::string &request, Deadline deadline, int wake_fd);
  void write_all(const std::string &bytes, Deadline deadline);
  // Reads into m_in until `complete()`, at most `limit` bytes, by
  // `deadline`: 1 complete, 0: end of stream, -1: woken, -2: deadline.
  template <typename Complete> int fill(std::size_t limit, Deadline deadline, int wake_fd, Complete &&complete);
  int read_head(Deadline deadline, int wake_fd); // the status, or fill()'s -1/-2
  bool decode(std::string &out);                 // true once the body is complete
  [[noreturn]] void fail(const std::string &message);
  [[noreturn]] void lost(const std::string &message);

  net::Address m_address;
  net::TlsOptions m_tls_options;
  Millis m_connect_timeout;
  std::string m_where, m_host;
  net::Stream m_stream;
  std::string m_in;                   // received bytes not yet consumed
  bool m_reused = false;              // a response was read on this connection
  bool m_fresh = false;               // no byte of the current response arrived yet
  bool m_keep = true;                 // the server keeps the connection open
  bool m_busy = false;                // a request is in flight (or a stream open)
  http::BodyDecoder m_body;           // the current response's body
  std::optional<std::int64_t> m_date; // the current response's Date header
};

} // namespace dlock::backend::etcd
