#pragma once

#include "backend/etcd/http.hpp"
#include "backend/etcd/reply.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// etcd's v3 API through its JSON gateway (HTTP/1.1 POST /v3/..., 64-bit
// numbers as strings, bytes as base64), over dlock's own HTTP client.
namespace dlock::backend::etcd {

using SteadyClock = std::chrono::steady_clock;

// An error etcd answered with (a gRPC status): the request reached a
// member that refused it.
class EtcdError : public Error {
public:
  EtcdError(ExitCode exit, int grpc_code, const std::string &message) : Error(exit, message), m_grpc_code(grpc_code) {}
  int grpc_code() const { return m_grpc_code; }

private:
  int m_grpc_code;
};

// gRPC status codes the backend tells apart.
inline constexpr int k_grpc_not_found = 5;
inline constexpr int k_grpc_permission_denied = 7;
inline constexpr int k_grpc_unauthenticated = 16;

struct GatewayOptions {
  std::vector<std::string> endpoints; // "http://host:port" or "https://host:port"
  std::string cacert, cert, key;      // TLS files, empty: not given
  std::optional<std::string> user, password;
  Millis timeout{2000}; // each request to one endpoint
  std::string label;    // the redacted URL, for messages
};

// A watch on one key (or range) from a revision: a response that never
// ends, one JSON object per line (WatchEvent in reply.hpp).
class Gateway {
public:
  explicit Gateway(GatewayOptions options);
  ~Gateway();
  Gateway(const Gateway &) = delete;
  Gateway &operator=(const Gateway &) = delete;

  // POSTs `body` to `path` and returns the answer. An endpoint that cannot
  // be reached, does not answer within the timeout or has no leader is
  // left for the next one, until every endpoint was tried once or
  // `answer_by` passes: then UnavailableError (69). Refused credentials or
  // permissions throw EtcdError with 77, other refusals EtcdError with 69.
  // A readable `interrupt_fd` abandons the request (nullopt).
  std::optional<Json> call(const std::string &path, const Json &body,
                           std::optional<SteadyClock::time_point> answer_by = std::nullopt, int interrupt_fd = -1);

  // The same request to one endpoint only, for ping.
  Json call_endpoint(std::size_t endpoint, const std::string &path, const Json &body);
  const std::vector<std::string> &endpoints() const { return m_options.endpoints; }

  // Starts watching `key` for changes after `start_revision`; replaces
  // any earlier watch. The watch is served while call() or wait_watch()
  // run. Opening it may take until `by` (default: the request timeout).
  void watch(const std::string &key, std::int64_t start_revision,
             std::optional<SteadyClock::time_point> by = std::nullopt);
  // Keeps a watch on `key` open on the endpoint that answered last: opens
  // it (from `start_revision`) if the watch is on another key, or reopens
  // it there, from the last revision seen, if its stream ended or it is
  // on another endpoint. A failure leaves no watch open (watch_fd() -1).
  void keep_watching(const std::string &key, std::int64_t start_revision, SteadyClock::time_point by);
  void stop_watch();
  // The open watch stream's descriptor (readable when etcd sent something
  // on it), or -1.
  int watch_fd() const { return m_watch_open && m_watch ? m_watch->fd() : -1; }
  // Events that have already arrived, without waiting; a stream found
  // ended is marked closed.
  std::vector<WatchEvent> poll_watch();
  // Waits until the watch delivers events (returned), `until` passes or
  // `interrupt_fd` is readable (both: empty). A broken watch stream is
  // opened again on the next endpoint from the last revision seen; a
  // compacted start revision throws UnavailableError.
  std::vector<WatchEvent> wait_watch(SteadyClock::time_point until, int interrupt_fd);

private:
  // One request to one endpoint.
  struct Attempt {
    bool answered = false;    // etcd answered (answer, or code + message)
    bool interrupted = false; // the interrupt fd became readable
    Json answer;              // an object when etcd said yes
    int code = 0;             // gRPC status when it said no
    std::string message;      // its reason, with the endpoint
    std::string failure;      // why there was no answer
  };
  Attempt attempt(std::size_t endpoint, const std::string &path, const Json &body, SteadyClock::time_point deadline,
                  int interrupt_fd);
  HttpConnection &connection(std::size_t endpoint);
  std::vector<std::string> headers_for(std::size_t endpoint) const;
  // Logs in on `endpoint`; throws 77 when the credentials are refused.
  Attempt authenticate(std::size_t endpoint, SteadyClock::time_point deadline, int interrupt_fd);
  void start_watch_stream(std::optional<SteadyClock::time_point> by = std::nullopt);
  void take_watch_lines(std::vector<WatchEvent> &events);

  GatewayOptions m_options;
  net::TlsOptions m_tls;
  std::size_t m_current = 0;                                  // the endpoint that answered last
  std::map<std::size_t, std::string> m_tokens;                // auth token per endpoint, with a user
  std::vector<std::unique_ptr<HttpConnection>> m_connections; // per endpoint, kept alive
  // The watch: its own connection, the bytes not parsed yet, where it
  // resumes.
  std::unique_ptr<HttpConnection> m_watch;
  std::size_t m_watch_endpoint = 0;
  bool m_watch_open = false;
  std::string m_watch_buffer;
  std::string m_watch_key;
  Json m_watch_create;
  std::int64_t m_watch_next_revision = 0;
  std::size_t m_watch_failures = 0;
};

} // namespace dlock::backend::etcd
