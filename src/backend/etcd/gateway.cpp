#include "backend/etcd/gateway.hpp"

#include "core/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <poll.h>

namespace dlock::backend::etcd {

namespace {

constexpr int k_grpc_unavailable = 14;
constexpr int k_grpc_deadline_exceeded = 4;
constexpr const char *k_authenticate = "/v3/auth/authenticate";

long millis_left(SteadyClock::time_point until) {
  auto left = std::chrono::ceil<Millis>(until - SteadyClock::now()).count();
  return std::max<long>(1, static_cast<long>(left));
}

bool readable(int fd) {
  if (fd < 0) return false;
  pollfd item{fd, POLLIN, 0};
  return ::poll(&item, 1, 0) > 0 && (item.revents & POLLIN);
}

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
  if (!slot) slot = std::make_unique<HttpConnection>(m_options.endpoints[endpoint], m_tls, m_options.timeout);
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
    // One login per endpoint (nothing promises that a member honours
    // another's simple token), renewed once when etcd says it expired.
    Attempt result;
    for (int round = 0; round < 2; ++round) {
      if (m_options.user && !m_tokens.count(endpoint)) {
        Attempt login = authenticate(endpoint, deadline, interrupt_fd);
        if (!login.answered) {
          result = std::move(login);
          break;
        }
      }
      result = attempt(endpoint, path, body, deadline, interrupt_fd);
      if (!(result.code == k_grpc_unauthenticated && result.message.find("invalid auth token") != std::string::npos &&
            m_options.user))
        break;
      m_tokens.erase(endpoint);
    }
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
    if (is_auth_refusal(result.code, result.message)) {
      if (!m_options.user && result.message.find("user name is empty") != std::string::npos)
        throw EtcdError(ExitCode::auth, result.code,
                        fmt::format("{}: etcd requires authentication: give a user in the URL (etcd://USER@host) and "
                                    "its password in DLOCK_PASSWORD or --password-file",
                                    m_options.label));
      throw EtcdError(ExitCode::auth, result.code, fmt::format("{}: {}", m_options.label, result.message));
    }
    throw EtcdError(ExitCode::unavailable, result.code, result.message);
  }
  if (failures.empty()) failures.push_back("no time left to ask");
  throw UnavailableError(fmt::format("{}: etcd did not answer: {}", m_options.label, fmt::join(failures, "; ")));
}

Json Gateway::call_endpoint(std::size_t endpoint, const std::string &path, const Json &body) {
  GatewayOptions one = m_options;
  one.endpoints = {m_options.endpoints.at(endpoint)};
  Gateway single(std::move(one));
  if (auto token = m_tokens.find(endpoint); token != m_tokens.end()) single.m_tokens[0] = token->second;
  return *single.call(path, body);
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

void Gateway::watch(const std::string &key, std::int64_t start_revision, std::optional<SteadyClock::time_point> by) {
  stop_watch();
  m_watch_create = {
      {"create_request", {{"key", base64_encode(key)}, {"start_revision", std::to_string(start_revision)}}}};
  m_watch_key = key;
  m_watch_next_revision = start_revision;
  m_watch_failures = 0;
  start_watch_stream(by);
}

void Gateway::keep_watching(const std::string &key, std::int64_t start_revision, SteadyClock::time_point by) {
  if (m_watch_create.is_null() || m_watch_key != key) {
    watch(key, start_revision, by);
  } else if (!m_watch_open || m_watch_endpoint != m_current) {
    m_watch_failures = 0;
    start_watch_stream(by);
  } else {
    return;
  }
  // etcd confirms a new watch with a message of its own: take it now, so
  // that the stream's descriptor turns readable only for what follows.
  while (m_watch_open && m_watch_buffer.find('\n') == std::string::npos && SteadyClock::now() < by) {
    if (!m_watch->read_stream(m_watch_buffer, by, -1)) m_watch_open = false;
  }
  if (!m_watch_open) m_watch.reset();
}

std::vector<WatchEvent> Gateway::poll_watch() {
  std::vector<WatchEvent> events;
  if (m_watch_create.is_null()) return events;
  if (m_watch_open) {
    // Everything there is now: each read takes what one recv gives.
    for (std::size_t before = ~std::size_t{0}; m_watch_buffer.size() != before;) {
      before = m_watch_buffer.size();
      if (!m_watch->read_stream(m_watch_buffer, SteadyClock::now(), -1)) {
        m_watch_open = false;
        break;
      }
    }
  }
  take_watch_lines(events);
  if (!m_watch_open) m_watch.reset();
  return events;
}

void Gateway::stop_watch() {
  m_watch_create = Json();
  m_watch_key.clear();
  m_watch.reset();
  m_watch_open = false;
  m_watch_buffer.clear();
}

void Gateway::start_watch_stream(std::optional<SteadyClock::time_point> by) {
  m_watch_open = false;
  m_watch_buffer.clear();
  std::size_t endpoint = (m_current + m_watch_failures) % m_options.endpoints.size();
  m_watch_endpoint = endpoint;
  m_watch_create["create_request"]["start_revision"] = std::to_string(m_watch_next_revision);
  auto deadline = by.value_or(SteadyClock::now() + m_options.timeout);
  try {
    if (m_options.user && !m_tokens.count(endpoint)) authenticate(endpoint, deadline, -1);
    m_watch = std::make_unique<HttpConnection>(m_options.endpoints[endpoint], m_tls, m_options.timeout);
    std::vector<std::string> headers = headers_for(endpoint);
    // A member cut off from its leader must end the watch, not keep it
    // open and silent.
    headers.push_back("Grpc-Metadata-hasleader: true");
    int status = m_watch->open_stream("/v3/watch", m_watch_create.dump(), headers, deadline);
    if (status == 200) {
      m_watch_open = true;
      return;
    }
    if (status == 401) m_tokens.erase(endpoint);
    detail(2, "etcd watch on {}: HTTP status {}", m_options.endpoints[endpoint], status);
  } catch (const Error &failure) {
    if (failure.code() != ExitCode::unavailable) throw;
    detail(2, "etcd watch on {}: {}", m_options.endpoints[endpoint], failure.what());
  }
  m_watch.reset();
  ++m_watch_failures;
}

void Gateway::take_watch_lines(std::vector<WatchEvent> &events) {
  std::string &buffer = m_watch_buffer;
  std::size_t start = 0;
  for (std::size_t end; (end = buffer.find('\n', start)) != std::string::npos; start = end + 1) {
    WatchLine line = parse_watch_line(std::string_view(buffer).substr(start, end - start));
    switch (line.kind) {
    case WatchLine::Kind::error:
      // A stream-level error (leader lost, member stopping): open again.
      detail(2, "etcd watch: {}", line.error);
      if (line.error.find("invalid auth token") != std::string::npos) m_tokens.erase(m_watch_endpoint);
      m_watch_open = false;
      break;
    case WatchLine::Kind::canceled:
      if (line.compact_revision > 0) {
        // The history we asked for is gone: the caller must look again.
        WatchEvent reset;
        reset.mod_revision = -1;
        events.push_back(reset);
        m_watch_next_revision = line.compact_revision;
      }
      m_watch_open = false;
      break;
    case WatchLine::Kind::events:
      for (auto &event : line.events) {
        m_watch_next_revision = std::max(m_watch_next_revision, event.mod_revision + 1);
        events.push_back(std::move(event));
      }
      break;
    case WatchLine::Kind::other:
      break;
    }
  }
  buffer.erase(0, start);
}

std::vector<WatchEvent> Gateway::wait_watch(SteadyClock::time_point until, int interrupt_fd) {
  std::vector<WatchEvent> events;
  if (m_watch_create.is_null()) return events;
  auto next_open = SteadyClock::time_point::min();
  for (;;) {
    take_watch_lines(events);
    if (!events.empty()) return events;
    if (!m_watch_open) {
      // The stream ended (member down or stopping) or never opened: open
      // it again from the next revision, on the next endpoint, at most
      // every 100ms.
      auto now = SteadyClock::now();
      if (now < next_open) {
        pollfd item{interrupt_fd, POLLIN, 0};
        ::poll(&item, interrupt_fd >= 0 ? 1 : 0, static_cast<int>(millis_left(std::min(until, next_open))));
      } else {
        next_open = now + Millis(100);
        if (m_watch) ++m_watch_failures;
        start_watch_stream();
      }
    } else if (!m_watch->read_stream(m_watch_buffer, until, interrupt_fd)) {
      m_watch_open = false;
    }
    if (SteadyClock::now() >= until || readable(interrupt_fd)) {
      take_watch_lines(events);
      return events;
    }
  }
}

} // namespace dlock::backend::etcd
