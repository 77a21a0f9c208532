#pragma once

#include "backend/backend.hpp"
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
  EtcdError(ExitCode exit, int grpc_code, const std::string &message, bool answered = false)
      : Error(exit, message, answered), m_grpc_code(grpc_code) {}
  int grpc_code() const { return m_grpc_code; }

private:
  int m_grpc_code;
};

// gRPC status codes the backend tells apart.
inline constexpr int k_grpc_not_found = 5;
inline constexpr int k_grpc_permission_denied = 7;
inline constexpr int k_grpc_unauthenticated = 16;
// Whether a gRPC status is the cluster's answer (no space, too many
// requests, a compacted revision, ...) rather than a member that could not
// reach it: 1 cancelled, 4 deadline exceeded and 14 unavailable (no leader,
// stopping) are not (AnsweredError).
inline bool grpc_answered(int code) { return code != 0 && code != 1 && code != 4 && code != 14; }

struct GatewayOptions {
  std::vector<std::string> endpoints; // "http://host:port" or "https://host:port"
  std::string cacert, cert, key;      // TLS files, empty: not given
  std::optional<std::string> user, password;
  Millis timeout{2000}; // each request to one endpoint
  std::string label;    // the redacted URL, for messages
};

// The options for config.url: etcd://host[:2379][,host[:port]...] or
// etcds:// with ?cacert=&cert=&key=, a user and a password (from the URL
// or config.password). ConfigError (78) for anything else.
GatewayOptions gateway_options(const BackendConfig &config);

// A member's clock as its last answer showed it: its Date header (whole
// seconds), and this host's wall clock when the request went and when the
// answer came.
struct ServerClock {
  std::optional<std::int64_t> date;
  std::chrono::system_clock::time_point sent, received;
};

// Requests to an etcd cluster: each goes to the endpoint that answered
// last and fails over to the others; with a user, each endpoint gets its
// own login. The watch (watch.hpp) has a connection of its own.
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

  // The same request to one endpoint only, for ping and doctor.
  Json call_endpoint(std::size_t endpoint, const std::string &path, const Json &body);
  // The clock of the member that answered last.
  const ServerClock &last_clock() const { return m_last_clock; }
  const std::vector<std::string> &endpoints() const { return m_options.endpoints; }

  // The endpoint that answered last, where the next request goes first.
  std::size_t current_endpoint() const { return m_current; }
  Millis timeout() const { return m_options.timeout; }

  // For a stream of its own (the watch): a new connection to `endpoint`,
  // and the headers of a request there, logging in first (by `deadline`)
  // with a user and no token for it yet. Credentials refused: EtcdError 77.
  std::unique_ptr<HttpConnection> connect(std::size_t endpoint) const;
  std::vector<std::string> stream_headers(std::size_t endpoint, SteadyClock::time_point deadline);
  // A token etcd no longer takes (it expired): the next request there
  // logs in again.
  void forget_token(std::size_t endpoint) { m_tokens.erase(endpoint); }

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
  // attempt(), logged in first when a user is given.
  Attempt attempt_logged_in(std::size_t endpoint, const std::string &path, const Json &body,
                            SteadyClock::time_point deadline, int interrupt_fd);
  // Throws what etcd's refusal means: EtcdError 77 for credentials or
  // permissions, 69 otherwise.
  [[noreturn]] void refuse(const Attempt &refused) const;
  // Logs in on `endpoint`; throws 77 when the credentials are refused.
  Attempt authenticate(std::size_t endpoint, SteadyClock::time_point deadline, int interrupt_fd);

  GatewayOptions m_options;
  net::TlsOptions m_tls;
  std::size_t m_current = 0;                                  // the endpoint that answered last
  ServerClock m_last_clock;                                   // and its clock
  std::map<std::size_t, std::string> m_tokens;                // auth token per endpoint, with a user
  std::vector<std::unique_ptr<HttpConnection>> m_connections; // per endpoint, kept alive
};

// ping: each member's reachability, version and role (leader, follower,
// no leader), and whether a majority of them can serve locks.
PingResult ping_members(Gateway &gateway);

} // namespace dlock::backend::etcd
