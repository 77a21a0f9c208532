#include "backend/redis/common.hpp"

#include "backend/redis/scripts.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <poll.h>

namespace dlock::backend::redis {

std::string tag_head(const std::string &lock_namespace) {
  std::string ns;
  for (char c : lock_namespace)
    ns += c == ':' ? std::string("%3A") : std::string(1, c);
  return "{" + ns + ":";
}

Keys keys_for(const std::string &lock_namespace, const std::string &name) {
  std::string tag = tag_head(lock_namespace) + name + "}";
  return {tag + ":lock",  tag + ":info",     tag + ":fence",   tag + ":released",
          tag + ":sem",   tag + ":sem-info", tag + ":readers", tag + ":readers-info",
          tag + ":queue", tag + ":turns",    tag + ":sem-free"};
}

std::vector<std::string> script_command(const char *script, const Keys &keys, std::initializer_list<std::string> args) {
  std::vector<std::string> command = {"EVAL", script, "3", keys.lock, keys.info, keys.fence};
  command.insert(command.end(), args);
  return command;
}

std::vector<std::string> semaphore_command(const std::string &script, const Keys &keys,
                                           std::initializer_list<std::string> args) {
  std::vector<std::string> command = {"EVAL",
                                      script,
                                      "10",
                                      keys.lock,
                                      keys.info,
                                      keys.fence,
                                      keys.semaphore,
                                      keys.semaphore_info,
                                      keys.readers,
                                      keys.readers_info,
                                      keys.queue,
                                      keys.turns,
                                      keys.semaphore_free};
  command.insert(command.end(), args);
  return command;
}

std::string new_semaphore_token() { return std::string(k_semaphore_token_prefix) + random_hex(16); }

bool is_semaphore_token(std::string_view token) {
  return token.size() > k_semaphore_token_prefix.size() &&
         token.compare(0, k_semaphore_token_prefix.size(), k_semaphore_token_prefix) == 0;
}

namespace {

// One {pttl, holder fields} entry of the status script's reply.
HolderStatus holder_status(const Reply &entry, const std::string &what, const std::string &name,
                           const std::string &key) {
  if (entry.type != Reply::Type::array || entry.elements.size() != 2 || entry.elements[1].type != Reply::Type::array)
    throw UnavailableError(
        fmt::format("unexpected reply about {} '{}' ({}): not a server dlock can talk to", what, name, key));
  HolderStatus holder;
  holder.info = holder_from(entry.elements[1]);
  holder.fence = fence_from(entry.elements[1]);
  if (auto left = to_integer(entry.elements[0].str); left && *left >= 0) holder.time_left = Millis(*left);
  return holder;
}

} // namespace

std::string new_shared_token() { return std::string(k_shared_token_prefix) + random_hex(16); }

bool is_shared_token(std::string_view token) {
  return token.size() > k_shared_token_prefix.size() &&
         token.compare(0, k_shared_token_prefix.size(), k_shared_token_prefix) == 0;
}

void add_shared_status(LockStatus &status, const Reply &reply, const Keys &keys) {
  if (status.held || reply.elements.size() < 6 || reply.elements[5].type != Reply::Type::array ||
      reply.elements[5].elements.empty())
    return;
  status.held = true;
  status.mode = HoldMode::shared;
  status.detail = fmt::format("key {}", keys.readers);
  // The name's last fence is no reader's; each reader has its own.
  status.fence.reset();
  status.time_left.reset();
  for (const Reply &entry : reply.elements[5].elements)
    status.holders.push_back(holder_status(entry, "shared lock", status.name, keys.readers));
}

void add_semaphore_status(LockStatus &status, const Reply &reply, const Keys &keys) {
  if (status.held || reply.elements.size() < 5 || reply.elements[4].type != Reply::Type::array ||
      reply.elements[4].elements.empty())
    return;
  status.held = true;
  status.mode = HoldMode::semaphore;
  status.detail = fmt::format("key {}", keys.semaphore);
  if (auto limit = to_integer(reply.elements[3].str); limit && *limit > 0 && *limit <= max_limit)
    status.limit = static_cast<unsigned>(*limit);
  // The name's last fence is no holder's; each holder has its own.
  status.fence.reset();
  status.time_left.reset();
  for (const Reply &entry : reply.elements[4].elements) {
    HolderStatus holder = holder_status(entry, "semaphore", status.name, keys.semaphore);
    const Reply &values = entry.elements[1];
    for (std::size_t i = 0; i + 1 < values.elements.size(); i += 2)
      if (values.elements[i].str == "slot")
        if (auto slot = to_integer(values.elements[i + 1].str); slot && *slot >= 0 && *slot < max_limit)
          holder.slot = static_cast<unsigned>(*slot);
    status.holders.push_back(std::move(holder));
  }
}

std::optional<long long> to_integer(std::string_view text) {
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

int parse_db(std::string_view text, const std::string &url) {
  auto value = to_integer(text);
  if (!value || *value < 0 || *value > 1'000'000)
    throw ConfigError(fmt::format("bad database number '{}' in {}", text, url));
  return static_cast<int>(*value);
}

std::string glob_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

HolderInfo holder_from(const Reply &fields) {
  std::map<std::string, std::string> values;
  for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2)
    values[fields.elements[i].str] = fields.elements[i + 1].str;
  HolderInfo holder;
  holder.host = values["host"];
  holder.pid = to_integer(values["pid"]).value_or(0);
  holder.user = values["user"];
  holder.command = values["command"];
  // Beyond about 292 years from 1970 the system clock's nanoseconds
  // overflow: such a time is unknown (0), not undefined behaviour.
  constexpr long long max_since_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::duration::max()).count();
  if (auto since = to_integer(values["since"]); since && *since >= -max_since_ms && *since <= max_since_ms)
    holder.since = std::chrono::system_clock::time_point(std::chrono::milliseconds(*since));
  return holder;
}

std::optional<std::uint64_t> fence_from(const Reply &fields) {
  for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2)
    if (fields.elements[i].str == "fence")
      if (auto value = to_integer(fields.elements[i + 1].str); value && *value > 0)
        return static_cast<std::uint64_t>(*value);
  return std::nullopt;
}

LockStatus status_from(const std::string &name, const Reply &reply, const Keys &keys) {
  LockStatus status;
  status.name = name;
  status.detail = fmt::format("key {}", keys.lock);
  // {pttl, holder fields[, fence]} and nothing else: a reply of another
  // request is never taken for "free" or "held".
  if (reply.type != Reply::Type::array || reply.elements.size() < 2 || reply.elements[0].type != Reply::Type::integer ||
      reply.elements[1].type != Reply::Type::array)
    throw UnavailableError(
        fmt::format("unexpected reply about lock '{}' ({}): not a server dlock can talk to", name, keys.lock));
  if (reply.elements.size() > 2)
    if (auto last = to_integer(reply.elements[2].str); last && *last > 0)
      status.fence = static_cast<std::uint64_t>(*last);
  if (reply.elements[0].integer == -2) return status;
  status.held = true;
  if (reply.elements[0].integer >= 0) status.time_left = Millis(reply.elements[0].integer);
  if (!reply.elements[1].elements.empty()) {
    status.holder = holder_from(reply.elements[1]);
    if (auto fence = fence_from(reply.elements[1])) status.fence = fence;
  }
  return status;
}

std::vector<std::string> renew_command(const Keys &keys, const std::string &token, Millis ttl) {
  return script_command(
      lua::renew, keys,
      {token, std::to_string(std::max(ttl, Millis(0)).count()), std::to_string(k_unrecorded_length.count())});
}

std::optional<RenewReply> read_renew_reply(const Reply &reply) {
  if (reply.type == Reply::Type::integer && reply.integer == 0) return RenewReply{};
  if (reply.type != Reply::Type::array || reply.elements.size() != 2) return std::nullopt;
  const Reply &first = reply.elements[0];
  if (first.type != Reply::Type::integer || first.integer != 1) return std::nullopt;
  const Reply &length = reply.elements[1];
  std::optional<long long> ms;
  if (length.type == Reply::Type::integer) ms = length.integer;
  if (length.type == Reply::Type::string) ms = to_integer(length.str);
  if (!ms || *ms < 1) return std::nullopt;
  return RenewReply{Millis(*ms)};
}

std::optional<Millis> quorum_length(std::vector<Millis> lengths, std::size_t majority) {
  if (majority == 0 || lengths.size() < majority) return std::nullopt;
  std::nth_element(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(majority - 1), lengths.end(),
                   std::greater<>());
  return lengths[majority - 1];
}

std::optional<std::string> take_option(std::map<std::string, std::string> &query, const std::string &key) {
  auto found = query.find(key);
  if (found == query.end()) return std::nullopt;
  std::string value = found->second;
  query.erase(found);
  return value;
}

Clock::time_point retry_at(Clock::time_point now, long long holder_pttl, Millis cap, std::minstd_rand &random) {
  Millis left = std::min(holder_pttl > 0 ? Millis(holder_pttl) : Millis(50), cap);
  Millis spread = std::clamp(left / 10, Millis(5), Millis(200));
  return now + left + Millis(std::uniform_int_distribution<long>(0, spread.count())(random));
}

void sleep_until(Clock::time_point wake, const Interrupt &interrupt) {
  pollfd item{interrupt.fd(), POLLIN, 0};
  for (;;) {
    auto left = std::chrono::ceil<Millis>(wake - Clock::now()).count();
    if (left <= 0 || interrupt.requested()) return;
    poll(&item, item.fd >= 0 ? 1 : 0, static_cast<int>(left));
  }
}

void AwayBackoff::ride_out(const UnavailableError &away, const std::string &name,
                           std::optional<Clock::time_point> deadline, const Interrupt &interrupt) {
  if (deadline && Clock::now() >= *deadline) throw; // `away`, still being handled
  detail(1, "waiting on '{}': {}; trying again in {}", name, away.what(), format_duration(m_next));
  auto wake = Clock::now() + m_next;
  sleep_until(deadline ? std::min(wake, *deadline) : wake, interrupt);
  m_next = std::min(m_next * 2, Millis(1000));
}

bool subscribe(Connection &subscriber, const std::string &channel, Deadline deadline) {
  std::string command;
  append_command(command, {"SUBSCRIBE", channel});
  subscriber.send(command, deadline);
  std::optional<Reply> reply = subscriber.read(deadline);
  if (!reply) {
    subscriber.close();
    throw UnavailableError(fmt::format("{}: no answer to SUBSCRIBE in time", subscriber.where()));
  }
  if (reply->is_error()) {
    detail(1, "cannot subscribe to {} at {} ({}): waiting by polling", channel, subscriber.address().display(),
           reply->str);
    subscriber.close();
    return false;
  }
  return true;
}

ConnectionOptions connection_options(const BackendConfig &config, std::map<std::string, std::string> &query, bool tls) {
  ConnectionOptions options;
  options.timeout = config.connect_timeout;
  options.user = config.url.user.value_or("");
  options.password = config.password ? config.password : config.url.password;
  if (!tls) return options;
  auto take = [&query](const std::string &key) { return take_option(query, key).value_or(""); };
  options.tls.enabled = true;
  options.tls.ca_file = take("cacert");
  options.tls.cert_file = take("cert");
  options.tls.key_file = take("key");
  std::string insecure = take("insecure");
  options.tls.insecure = insecure == "1" || insecure == "true";
  return options;
}

Reply check_reply(Reply reply, const std::string &where) {
  if (!reply.is_error()) return reply;
  std::string_view code = reply.error_code();
  if (code == "NOAUTH" || reply.str.find("Protocol error: unauthenticated") != std::string::npos)
    throw Error(ExitCode::auth,
                fmt::format("{} requires a password: give it with DLOCK_PASSWORD or --password-file", where));
  if (code == "WRONGPASS" || code == "NOPERM")
    throw Error(ExitCode::auth, fmt::format("{} refused: {}", where, reply.str));
  // The server answered: someone may hold the lock (AnsweredError).
  if (code == "READONLY")
    throw AnsweredError(fmt::format("{} is a read-only replica: locks need the master (point dlock at it, or "
                                    "use redis-sentinel://)",
                                    where));
  throw AnsweredError(fmt::format("{}: server error: {}", where, reply.str));
}

} // namespace dlock::backend::redis
