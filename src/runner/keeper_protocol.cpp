#include "runner/keeper_protocol.hpp"

#include "core/exit_code.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <limits>

namespace dlock::runner {

namespace {

using nlohmann::json;

// The document on `line`, if it is one JSON object on one line within the
// size limit.
std::optional<json> parse_line(std::string_view line) {
  if (line.size() > k_keeper_line_max || line.find('\n') != std::string_view::npos) return std::nullopt;
  json doc = json::parse(line.begin(), line.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  return doc;
}

std::optional<std::string> text(const json &doc, const char *key) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// Durations beyond this (about 31 years) are refused: a steady clock
// instant in nanoseconds plus one of them cannot overflow.
constexpr std::uint64_t k_max_ms = 1'000'000'000'000;

// A non-negative integer up to `limit`; nullopt otherwise.
std::optional<std::int64_t> count(const json &doc, const char *key,
                                  std::uint64_t limit = std::numeric_limits<std::int64_t>::max()) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_number_unsigned()) return std::nullopt;
  std::uint64_t value = it->get<std::uint64_t>();
  if (value > limit) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

// Exit codes a keeper may pass on: the failures a backend reports. Anything
// else from the socket is taken as an internal error.
int checked_code(std::int64_t code) {
  for (ExitCode known : {ExitCode::unavailable, ExitCode::internal, ExitCode::auth, ExitCode::config})
    if (code == to_int(known)) return static_cast<int>(code);
  return to_int(ExitCode::internal);
}

// A backend's error message may quote a server's bytes, and a token comes
// from the command line: invalid UTF-8 is replaced, never thrown.
std::string dump_line(const json &doc) { return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

} // namespace

LockIdentity identity_of(const backend::BackendConfig &config, const std::string &name) {
  return {config.url.without_credentials(), config.lock_namespace, name};
}

std::string format_request(const KeeperRequest &request) {
  json doc = {{"op", request.operation == KeeperOperation::renew ? "renew" : "release"},
              {"backend", request.lock.backend},
              {"namespace", request.lock.lock_namespace},
              {"name", request.lock.name},
              {"token", request.token}};
  if (request.operation == KeeperOperation::renew) doc["ttl_ms"] = request.ttl.count();
  return dump_line(doc);
}

std::optional<KeeperRequest> parse_request(std::string_view line) {
  auto doc = parse_line(line);
  if (!doc) return std::nullopt;
  auto op = text(*doc, "op");
  auto backend = text(*doc, "backend");
  auto lock_namespace = text(*doc, "namespace");
  auto name = text(*doc, "name");
  auto token = text(*doc, "token");
  if (!op || !backend || !lock_namespace || !name || !token) return std::nullopt;
  KeeperRequest request;
  request.lock = {*backend, *lock_namespace, *name};
  request.token = *token;
  if (*op == "release") {
    request.operation = KeeperOperation::release;
  } else if (*op == "renew") {
    auto ttl = count(*doc, "ttl_ms", k_max_ms);
    if (!ttl) return std::nullopt;
    request.operation = KeeperOperation::renew;
    request.ttl = Millis(*ttl);
  } else {
    return std::nullopt;
  }
  return request;
}

// An error message as a reply carries it: control characters as '?' and at
// most k_message_max bytes, cut at a character boundary, so that any
// backend's message fits the line (JSON escapes a byte to at most three).
// Cutting again changes nothing.
namespace {

constexpr std::size_t k_message_max = 1024;

std::string bounded_message(std::string message) {
  for (char &c : message)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (message.size() > k_message_max) {
    std::size_t cut = k_message_max - 3;
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xc0) == 0x80)
      --cut;
    message = message.substr(0, cut) + "...";
  }
  return message;
}

} // namespace

std::string format_reply(const KeeperReply &reply) {
  json doc;
  switch (reply.answer) {
  case KeeperAnswer::done:
    doc = {{"answer", "done"},
           {"fence", reply.fence},
           {"confirmed_at_ns",
            std::chrono::duration_cast<std::chrono::nanoseconds>(reply.confirmed_at.time_since_epoch()).count()},
           {"ttl_ms", reply.ttl.count()},
           {"window_ms", reply.window.count()}};
    break;
  case KeeperAnswer::not_owner:
    doc = {{"answer", "not-owner"}};
    break;
  case KeeperAnswer::refused:
    doc = {{"answer", "refused"}};
    break;
  case KeeperAnswer::error:
    doc = {{"answer", "error"}, {"code", reply.code}, {"message", bounded_message(reply.message)}};
    break;
  }
  return dump_line(doc);
}

std::optional<KeeperReply> parse_reply(std::string_view line) {
  auto doc = parse_line(line);
  if (!doc) return std::nullopt;
  auto answer = text(*doc, "answer");
  if (!answer) return std::nullopt;
  KeeperReply reply;
  if (*answer == "done") {
    auto fence = doc->find("fence");
    auto confirmed = count(*doc, "confirmed_at_ns");
    auto ttl = count(*doc, "ttl_ms", k_max_ms);
    auto window = count(*doc, "window_ms", k_max_ms);
    if (fence == doc->end() || !fence->is_number_unsigned() || !confirmed || !ttl || !window) return std::nullopt;
    reply.answer = KeeperAnswer::done;
    reply.fence = fence->get<std::uint64_t>();
    reply.confirmed_at = SteadyClock::time_point(
        std::chrono::duration_cast<SteadyClock::duration>(std::chrono::nanoseconds(*confirmed)));
    reply.ttl = Millis(*ttl);
    reply.window = Millis(*window);
  } else if (*answer == "not-owner") {
    reply.answer = KeeperAnswer::not_owner;
  } else if (*answer == "refused") {
    reply.answer = KeeperAnswer::refused;
  } else if (*answer == "error") {
    auto code = count(*doc, "code");
    auto message = text(*doc, "message");
    if (!code || !message) return std::nullopt;
    reply.answer = KeeperAnswer::error;
    reply.code = checked_code(*code);
    reply.message = bounded_message(*message);
  } else {
    return std::nullopt;
  }
  return reply;
}

} // namespace dlock::runner
