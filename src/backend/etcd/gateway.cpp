#include "backend/etcd/gateway.hpp"

#include "backend/etcd/diagnose.hpp"
#include "core/log.hpp"
#include "net/net.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlock::backend::etcd {

namespace {

constexpr int k_grpc_unavailable = 14;
constexpr int k_grpc_deadline_exceeded = 4;
constexpr const char *k_authenticate = "/v3/auth/authenticate";
constexpr int k_default_port = 2379;

// etcd's refusals that mean "these credentials may not do this".
bool is_auth_refusal(int code, const std::string &message) {
  return code == k_grpc_unauthenticated || code == k_grpc_permission_denied ||
         message.find("authentication failed") != std::string::npos ||
         message.find("user name is empty") != std::string::npos ||
         message.find("permission denied") != std::string::npos;
}

} // namespace

Gateway::Gateway(GatewayOptions options) : m_options(std::move(options)) {
  for (const auto &endpoint : m_options.endpoints)
    if (endpoint.rfind("https://", 0) == 0) m_tls.enabled = true;
  m_tls.ca_file = m_options.cacert;
  m_tls.cert_file = m_options.cert;
  m_tls.key_file = m_options.key;
  m_connections.resize(m_options.endpoints.size());
}

Gateway::~Gateway() = default;

HttpConnection &Gateway::connection(std::size_t endpoint) {
  auto &slot = m_connections.at(endpoint);
  if (!slot) slot = connect(endpoint);
  return *slot;
}

std::vector<std::string> Gateway::headers_for(std::size_t endpoint) const {
  std::vector<std::string> headers;
  if (auto token = m_tokens.find(endpoint); token != m_tokens.end())
    headers.push_back("Authorization: " + token->second);
  return headers;
}

Gateway::Attempt Gateway::attempt(std::size_t endpoint, const std::string &path, const Json &body,
                                  SteadyClock::time_point deadline, int interrupt_fd) {
  Attempt out;
  std::optional<HttpResponse> response;
  auto sent = std::chrono::system_clock::now();
  try {
    response = connection(endpoint).post(path, body.dump(),
                                         path == k_authenticate ? std::vector<std::string>{} : headers_for(endpoint),
                                         deadline, interrupt_fd);
  } catch (const Error &failure) {
    if (failure.code() != ExitCode::unavailable) throw; // unusable TLS files: 78
    out.failure = failure.what();
    return out;
  }
  if (!response) {
    out.interrupted = true;
    out.failure = "interrupted";
    return out;
  }
  m_last_clock = {response->date, sent, std::chrono::system_clock::now()};
  const std::string &where = m_options.endpoints[endpoint];
  Json answer = Json::parse(response->body, nullptr, false);
  out.answered = true;
  if (response->status == 200 && answer.is_object()) {
    // Every etcd answer carries its response header (a stream's, such as
    // a keepalive's, inside "result"): one without it is no answer to this
    // request (a watch event, a proxy's page) and is never taken for one.
    auto result = answer.find("result");
    if (!answer.contains("header") && !(result != answer.end() && result->is_object() && result->contains("header"))) {
      out.answered = false;
      out.failure = fmt::format("{}: not an etcd answer to {}", where, path);
      return out;
    }
    out.answer = std::move(answer);
    return out;
  }
  Refusal refusal = refusal_in(answer, response->status);
  out.code = refusal.code;
  out.message = fmt::format("{}: {}", where, refusal.message);
  // etcd cannot serve this now (no leader, stopping, timed out inside):
  // another member may.
  if (out.code == k_grpc_unavailable || out.code == k_grpc_deadline_exceeded ||
      (response->status >= 500 && out.code == 0)) {
    out.answered = false;
    out.failure = out.message;
  }
  return out;
}

std::optional<Json> Gateway::call(const std::string &path, const Json &body,
                                  std::optional<SteadyClock::time_point> answer_by, int interrupt_fd) {
  std::vector<std::string> failures;
  std::size_t count = m_options.endpoints.size();
  const std::size_t first = m_current;
  for (std::size_t tried = 0; tried < count; ++tried) {
    std::size_t endpoint = (first + tried) % count;
    auto now = SteadyClock::now();
    auto deadline = now + m_options.timeout;
    if (answer_by) {
      deadline = std::min(deadline, *answer_by);
      // A request that must be answered by a deadline (a renewal) leaves
      // the other endpoints half of what is left: a silent member (paused,
      // cut off) must not use it all up.
      if (tried + 1 < count)
        deadline = std::min(deadline, now + std::max<SteadyClock::duration>(Millis(200), (*answer_by - now) / 2));
    }
    if (now >= deadline) break;
    Attempt result = attempt_logged_in(endpoint, path, body, deadline, interrupt_fd);
    if (result.interrupted) return std::nullopt;
    if (!result.answered) {
      failures.push_back(result.failure);
      // The next request (a retry) starts with the next endpoint.
      m_current = (endpoint + 1) % count;
      continue;
    }
    if (result.answer.is_object()) {
      m_current = endpoint;
      return std::move(result.answer);
    }
    refuse(result);
  }
  if (failures.empty()) failures.push_back("no time left to ask");
  throw UnavailableError(fmt::format("{}: etcd did not answer: {}", m_options.label, fmt::join(failures, "; ")));
}

Gateway::Attempt Gateway::attempt_logged_in(std::size_t endpoint, const std::string &path, const Json &body,
                                            SteadyClock::time_point deadline, int interrupt_fd) {
  // One login per endpoint (nothing promises that a member honours
  // another's simple token), renewed once when etcd says it expired.
  Attempt result;
  for (int round = 0; round < 2; ++round) {
    if (m_options.user && !m_tokens.count(endpoint)) {
      Attempt login = authenticate(endpoint, deadline, interrupt_fd);
      if (!login.answered) return login;
    }
    result = attempt(endpoint, path, body, deadline, interrupt_fd);
    if (!(result.code == k_grpc_unauthenticated && result.message.find("invalid auth token") != std::string::npos &&
          m_options.user))
      break;
    m_tokens.erase(endpoint);
  }
  return result;
}

void Gateway::refuse(const Attempt &refused) const {
  if (is_auth_refusal(refused.code, refused.message)) {
    if (!m_options.user && refused.message.find("user name is empty") != std::string::npos)
      throw EtcdError(ExitCode::auth, refused.code,
                      fmt::format("{}: etcd requires authentication: give a user in the URL (etcd://USER@host) and "
                                  "its password in DLOCK_PASSWORD or --password-file",
                                  m_options.label));
    throw EtcdError(ExitCode::auth, refused.code, fmt::format("{}: {}", m_options.label, refused.message));
  }
  throw EtcdError(ExitCode::unavailable, refused.code, refused.message, grpc_answered(refused.code));
}

Json Gateway::call_endpoint(std::size_t endpoint, const std::string &path, const Json &body) {
  GatewayOptions one = m_options;
  one.endpoints = {m_options.endpoints.at(endpoint)};
  Gateway single(std::move(one));
  if (auto token = m_tokens.find(endpoint); token != m_tokens.end()) single.m_tokens[0] = token->second;
  Json answer = *single.call(path, body);
  m_last_clock = single.m_last_clock;
  return answer;
}

Gateway::Attempt Gateway::authenticate(std::size_t endpoint, SteadyClock::time_point deadline, int interrupt_fd) {
  Json request = {{"name", *m_options.user}, {"password", m_options.password.value_or("")}};
  Attempt login = attempt(endpoint, k_authenticate, request, deadline, interrupt_fd);
  if (!login.answered) return login;
  if (!login.answer.is_object())
    throw EtcdError(
        ExitCode::auth, login.code,
        fmt::format("{}: authentication as '{}' refused: {}", m_options.label, *m_options.user, login.message));
  std::string token = string_in(login.answer, "token");
  if (token.empty())
    throw Error(ExitCode::auth, fmt::format("{}: etcd gave no token for user '{}' (is authentication enabled?)",
                                            m_options.label, *m_options.user));
  m_tokens[endpoint] = token;
  return login;
}

std::unique_ptr<HttpConnection> Gateway::connect(std::size_t endpoint) const {
  return std::make_unique<HttpConnection>(m_options.endpoints.at(endpoint), m_tls, m_options.timeout);
}

std::vector<std::string> Gateway::stream_headers(std::size_t endpoint, SteadyClock::time_point deadline) {
  if (m_options.user && !m_tokens.count(endpoint)) authenticate(endpoint, deadline, -1);
  return headers_for(endpoint);
}

GatewayOptions gateway_options(const BackendConfig &config) {
  const Url &url = config.url;
  GatewayOptions options;
  bool tls = url.scheme == "etcds";
  options.label = url.redacted();
  options.timeout = config.connect_timeout;
  if (url.hosts.empty()) throw ConfigError(fmt::format("{}: no etcd endpoint in the URL", options.label));
  if (!url.path.empty() && url.path != "/")
    throw ConfigError(fmt::format("{}: etcd URLs take no path (the namespace is --namespace)", options.label));
  for (const auto &[key, value] : url.query) {
    if (tls && key == "cacert") {
      options.cacert = value;
    } else if (tls && key == "cert") {
      options.cert = value;
    } else if (tls && key == "key") {
      options.key = value;
    } else {
      throw ConfigError(
          fmt::format("{}: unknown option '{}' (etcds:// takes cacert, cert and key)", options.label, key));
    }
  }
  if (options.cert.empty() != options.key.empty())
    throw ConfigError(fmt::format("{}: cert and key go together", options.label));
  for (const auto &host : url.hosts) {
    net::Address address = net::parse_address(host, k_default_port);
    options.endpoints.push_back(fmt::format("{}://{}", tls ? "https" : "http", address.display()));
  }
  options.user = url.user;
  options.password = config.password ? config.password : url.password;
  if (options.password && !options.user)
    throw ConfigError(fmt::format("{}: a password needs a user name in the URL (etcd://USER@host)", options.label));
  return options;
}

PingResult ping_members(Gateway &gateway) {
  PingResult result;
  std::size_t serving = 0;
  const auto &endpoints = gateway.endpoints();
  std::string leader_at;
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    NodeHealth health;
    health.address = endpoints[i];
    auto sent = SteadyClock::now();
    try {
      MemberStatus status = member_status_from(
          endpoints[i], gateway.call_endpoint(i, "/v3/maintenance/status", Json::object())); // as doctor reads it
      health.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - sent);
      health.reachable = true;
      std::uint64_t leader = status.leader, member = status.member_id;
      health.version = fmt::format("etcd {}, {}", status.version.empty() ? "?" : status.version,
                                   leader == 0        ? "no leader"
                                   : leader == member ? "leader"
                                                      : "follower");
      if (leader == member && leader != 0) leader_at = endpoints[i];
      if (leader == 0)
        health.error = "this member has no leader: it cannot serve locks";
      else
        ++serving;
    } catch (const Error &failure) {
      if (failure.code() == ExitCode::auth) throw; // the same credentials everywhere: 77, not "unreachable"
      health.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - sent);
      health.error = failure.what();
    }
    result.nodes.push_back(std::move(health));
  }
  result.quorum = serving * 2 > endpoints.size();
  if (!leader_at.empty()) result.detail = "leader: " + leader_at;
  return result;
}

} // namespace dlock::backend::etcd
