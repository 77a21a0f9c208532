#include "backend/zookeeper/diagnose.hpp"

#include "backend/zookeeper/four_letter.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>
#include <thread>

namespace dlock::backend::zookeeper {

namespace {

std::optional<long long> number(std::string_view text) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' '))
    text.remove_suffix(1);
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// ZooKeeper's own default (maxClientCnxns=60): fewer is "low".
constexpr long long k_usual_max_client_cnxns = 60;

} // namespace

ServerConf read_conf(const std::string &answer) {
  ServerConf conf;
  if (answer.find("not in the whitelist") != std::string::npos) {
    conf.error = "the four-letter word conf is not in 4lw.commands.whitelist";
    return conf;
  }
  if (answer.find("not currently serving requests") != std::string::npos) {
    conf.error = "the member is not serving requests";
    return conf;
  }
  std::string_view rest(answer);
  while (!rest.empty()) {
    std::string_view line = rest.substr(0, rest.find('\n'));
    rest.remove_prefix(std::min(rest.size(), line.size() + 1));
    auto equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view key = line.substr(0, equals);
    auto value = number(line.substr(equals + 1));
    if (key == "tickTime")
      conf.tick_ms = value;
    else if (key == "syncLimit")
      conf.sync_limit = value;
    else if (key == "maxClientCnxns")
      conf.max_client_cnxns = value;
    else if (key == "minSessionTimeout")
      conf.min_session_ms = value;
    else if (key == "maxSessionTimeout")
      conf.max_session_ms = value;
  }
  if (!conf.tick_ms) conf.error = "not an answer to conf (no tickTime)";
  return conf;
}

Millis negotiated_session(const ServerConf &conf, Millis ttl) {
  long long tick = conf.tick_ms.value_or(2000);
  long long low = conf.min_session_ms.value_or(2 * tick), high = conf.max_session_ms.value_or(20 * tick);
  return Millis(std::clamp<long long>(ttl.count(), low, std::max(low, high)));
}

Finding sync_limit_finding(const std::string &address, const ServerConf &conf, Millis ttl) {
  Finding f{"zk.sync-limit", Severity::ok, "", ""};
  Millis session = negotiated_session(conf, ttl);
  if (!conf.sync_limit || !conf.tick_ms) {
    f.found = fmt::format("{}: a standalone server (no syncLimit): no member can be cut off from a leader; --ttl {} "
                          "negotiates a {} session",
                          address, format_duration(ttl), format_duration(session));
    return f;
  }
  Millis window(*conf.sync_limit * *conf.tick_ms);
  if (window < session) {
    f.found = fmt::format("{}: syncLimit x tickTime = {} x {}ms = {}, shorter than the {} session --ttl {} negotiates",
                          address, *conf.sync_limit, *conf.tick_ms, format_duration(window), format_duration(session),
                          format_duration(ttl));
    return f;
  }
  // A member cut off from its leader goes on answering its clients this
  // long; the leader expires their sessions after the session timeout and
  // hands their locks on. dlock's renewals are writes, which such a member
  // cannot commit, so dlock itself stops its job by its own deadline; but
  // reads there (status, other clients' lock recipes, watches) are stale.
  f.severity = Severity::warning;
  f.found = fmt::format("{}: syncLimit x tickTime = {} x {}ms = {}, not shorter than the {} session --ttl {} "
                        "negotiates: a member cut off from its leader goes on answering after the leader expired "
                        "the session and gave the lock to another client (dlock's renewals are writes and fail "
                        "there, but status and other clients' recipes read stale holders)",
                        address, *conf.sync_limit, *conf.tick_ms, format_duration(window), format_duration(session),
                        format_duration(ttl));
  f.fix = fmt::format("lower syncLimit (or tickTime) so that syncLimit x tickTime < {}, or use a longer --ttl",
                      format_duration(session));
  return f;
}

Finding max_client_cnxns_finding(const std::string &address, const ServerConf &conf) {
  Finding f{"zk.max-client-cnxns", Severity::ok, "", ""};
  if (!conf.max_client_cnxns) {
    f.found = fmt::format("{}: maxClientCnxns not given: ZooKeeper's default, {}", address, k_usual_max_client_cnxns);
  } else if (*conf.max_client_cnxns == 0) {
    f.found = fmt::format("{}: maxClientCnxns=0: no limit per client host", address);
  } else if (*conf.max_client_cnxns < k_usual_max_client_cnxns) {
    f.severity = Severity::warning;
    f.found = fmt::format("{}: maxClientCnxns={}: each running dlock (run, an acquire keeper, a waiter) holds one "
                          "connection, so more than {} at once from one host are refused and fail as unavailable (69)",
                          address, *conf.max_client_cnxns, *conf.max_client_cnxns);
    f.fix = fmt::format("raise maxClientCnxns in zoo.cfg (ZooKeeper's default is {}; 0: no limit)",
                        k_usual_max_client_cnxns);
  } else {
    f.found = fmt::format("{}: maxClientCnxns={}", address, *conf.max_client_cnxns);
  }
  return f;
}

std::vector<Finding> diagnose_servers(const std::vector<net::Address> &addresses, Millis ttl, Millis timeout) {
  PingResult health = ping_servers(addresses, timeout);
  std::vector<std::string> answers(addresses.size()), failures(addresses.size());
  auto ask = [timeout](const net::Address &address, std::string &answer, std::string &failure) {
    std::string where = fmt::format("ZooKeeper at {}", address.display());
    try {
      answer = four_letter_word(address, "conf", std::chrono::steady_clock::now() + timeout, where, timeout);
    } catch (const Error &error) {
      failure = error.what();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < addresses.size(); ++i)
    if (health.nodes[i].reachable)
      threads.emplace_back(ask, std::cref(addresses[i]), std::ref(answers[i]), std::ref(failures[i]));
  for (auto &thread : threads)
    thread.join();
  std::size_t serving = 0;
  std::vector<std::string> problems;
  for (const NodeHealth &node : health.nodes) {
    if (node.reachable && node.error.empty())
      ++serving;
    else
      problems.push_back(fmt::format("{}: {}", node.address, node.error.empty() ? "unreachable" : node.error));
  }
  if (std::none_of(health.nodes.begin(), health.nodes.end(), [](const NodeHealth &n) { return n.reachable; }))
    throw UnavailableError(fmt::format("no ZooKeeper server answered: {}", fmt::join(problems, "; ")));
  Finding members{"zk.members", Severity::ok, fmt::format("{} of {} servers serve", serving, addresses.size()), ""};
  if (!problems.empty()) {
    members.severity = health.quorum.value_or(serving > 0) ? Severity::warning : Severity::unsafe;
    members.found += fmt::format(" ({})", fmt::join(problems, "; "));
    members.fix = "repair the members that do not serve, or list only the ensemble's members in the URL";
  }
  std::vector<Finding> out{members};
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (!health.nodes[i].reachable) continue;
    std::string address = addresses[i].display();
    ServerConf conf = failures[i].empty() ? read_conf(answers[i]) : ServerConf{};
    if (!failures[i].empty()) conf.error = failures[i];
    if (!conf.error.empty()) {
      out.push_back({"zk.conf", Severity::warning,
                     fmt::format("{}: cannot read its configuration: {}; syncLimit and maxClientCnxns not checked",
                                 address, conf.error),
                     conf.error.find("whitelist") != std::string::npos
                         ? "add conf to 4lw.commands.whitelist in zoo.cfg (4lw.commands.whitelist=srvr,conf)"
                         : "see zk.members"});
      continue;
    }
    out.push_back(sync_limit_finding(address, conf, ttl));
    out.push_back(max_client_cnxns_finding(address, conf));
  }
  return out;
}

} // namespace dlock::backend::zookeeper
