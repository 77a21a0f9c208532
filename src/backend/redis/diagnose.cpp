#include "backend/redis/diagnose.hpp"

#include "backend/redis/common.hpp"
#include "core/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace dlock::backend::redis {

namespace {

std::optional<long long> number(std::string_view text) {
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// "ip=10.0.0.2,port=6380,state=online,..." -> "10.0.0.2:6380".
std::string replica_address(std::string_view value) {
  std::string ip, port;
  while (!value.empty()) {
    std::string_view item = value.substr(0, value.find(','));
    value.remove_prefix(std::min(value.size(), item.size() + 1));
    if (item.rfind("ip=", 0) == 0) ip = std::string(item.substr(3));
    if (item.rfind("port=", 0) == 0) port = std::string(item.substr(5));
  }
  return ip.empty() || port.empty() ? std::string() : ip + ":" + port;
}

std::string host_port(const std::string &host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

} // namespace

void read_info(const std::string &info, ServerFacts &facts) {
  std::string_view rest(info);
  std::string replid;
  while (!rest.empty()) {
    std::string_view line = rest.substr(0, rest.find('\n'));
    rest.remove_prefix(std::min(rest.size(), line.size() + 1));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto colon = line.find(':');
    if (line.empty() || line.front() == '#' || colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon), value = line.substr(colon + 1);
    if (key == "redis_version")
      facts.version = "redis " + std::string(value);
    else if (key == "role")
      facts.role = value == "slave" ? "replica" : std::string(value);
    else if (key == "run_id")
      facts.run_id = value;
    else if (key == "maxmemory_policy")
      facts.eviction_policy = value;
    else if (key == "maxmemory")
      facts.maxmemory = number(value).value_or(0);
    else if (key == "aof_enabled")
      facts.aof = value == "1";
    else if (key == "master_host")
      facts.master_host = value;
    else if (key == "master_port")
      facts.master_port = static_cast<int>(number(value).value_or(0));
    else if (key.rfind("slave", 0) == 0 && number(key.substr(5)) && facts.replicas.size() < 64)
      if (std::string address = replica_address(value); !address.empty()) facts.replicas.push_back(address);
  }
}

std::string facts_request() {
  std::string request;
  append_command(request, {"INFO"});
  append_command(request, {"CONFIG", "GET", "save"});
  append_command(request, {"TIME"});
  return request;
}

ServerFacts facts_from(const std::string &address, const std::vector<Reply> &replies) {
  ServerFacts facts;
  facts.address = address;
  if (replies.size() != k_fact_replies) return facts;
  if (replies[0].type == Reply::Type::string) read_info(replies[0].str, facts);
  const Reply &save = replies[1];
  if (save.type == Reply::Type::array && save.elements.size() == 2 && save.elements[1].type == Reply::Type::string)
    facts.save = save.elements[1].str;
  else if (save.type == Reply::Type::array)
    facts.save_error = "CONFIG GET save gave no value";
  else
    facts.save_error =
        save.is_error() ? "CONFIG GET save refused: " + save.str.substr(0, 200) : "no answer to CONFIG GET save";
  const Reply &time = replies[2];
  if (time.type == Reply::Type::array && time.elements.size() == 2) {
    auto seconds = number(time.elements[0].str), micros = number(time.elements[1].str);
    if (seconds && micros && *seconds >= 0 && *seconds < (1LL << 40) && *micros >= 0 && *micros < 1'000'000)
      facts.time_us = *seconds * 1'000'000 + *micros;
  }
  return facts;
}

Finding eviction_finding(const ServerFacts &server) {
  // Eviction of a held lock's key hands the lock to a second holder; an
  // allkeys- policy can also evict a fence counter (which has no TTL).
  Finding f{"redis.maxmemory-policy", Severity::ok, "", ""};
  const std::string &policy = server.eviction_policy;
  if (policy.empty() || policy == "noeviction") {
    f.found = fmt::format("{}: maxmemory-policy {}: held locks are never evicted", server.address,
                          policy.empty() ? "unknown (INFO does not say)" : policy);
    if (policy.empty()) {
      f.severity = Severity::warning;
      f.fix = "make sure the server's maxmemory-policy is noeviction (CONFIG GET maxmemory-policy)";
    }
    return f;
  }
  bool allkeys = policy.rfind("allkeys-", 0) == 0;
  std::string what = allkeys ? "held locks and fence counters" : "held locks (their keys have a TTL)";
  f.fix = "CONFIG SET maxmemory-policy noeviction (and maxmemory-policy noeviction in redis.conf)";
  if (server.maxmemory == 0) {
    f.severity = Severity::warning;
    f.found = fmt::format("{}: maxmemory-policy {} with no maxmemory: nothing is evicted now, but once maxmemory is "
                          "set it can evict {}",
                          server.address, policy, what);
  } else {
    f.severity = Severity::unsafe;
    f.found = fmt::format("{}: maxmemory-policy {} (maxmemory {}): under memory pressure it evicts {}, and another "
                          "client then gets a lock that is still held",
                          server.address, policy, server.maxmemory, what);
  }
  return f;
}

Finding persistence_finding(const ServerFacts &server, bool redlock) {
  Finding f{"redis.persistence", Severity::ok, "", ""};
  bool rdb = server.save && !server.save->empty();
  if (server.aof) {
    f.found = fmt::format("{}: appendonly yes: held locks survive a restart", server.address);
    return f;
  }
  if (!server.save) {
    f.severity = Severity::warning;
    f.found = fmt::format("{}: appendonly no, and the snapshot schedule cannot be read ({})", server.address,
                          server.save_error);
    f.fix = "CONFIG SET appendonly yes (and appendonly yes in redis.conf)";
    return f;
  }
  f.fix = "CONFIG SET appendonly yes (and appendonly yes in redis.conf)";
  if (redlock) f.fix += ", or keep a restarted node out for longer than the longest --ttl";
  if (rdb) {
    f.severity = Severity::warning;
    f.found = fmt::format("{}: snapshots only (save \"{}\"), no append-only file: a restart forgets every lock taken "
                          "since the last snapshot",
                          server.address, *server.save);
    return f;
  }
  // Redlock survives one forgetful node; its majority does not.
  f.severity = redlock ? Severity::warning : Severity::unsafe;
  f.found = fmt::format("{}: no persistence (appendonly no, save \"\"): a restart forgets every held lock, and the "
                        "next client gets it while its holder still runs",
                        server.address);
  return f;
}

Finding role_finding(const ServerFacts &server) {
  Finding f{"redis.role", Severity::ok, "", ""};
  if (server.role == "master") {
    f.found = fmt::format("{}: a master", server.address);
  } else if (server.role.empty()) {
    f.severity = Severity::warning;
    f.found = fmt::format("{}: INFO does not give the role", server.address);
  } else {
    f.severity = Severity::unsafe;
    f.found = fmt::format("{}: a read-only replica of {}: dlock cannot take locks here (69), and what it reads lags "
                          "behind the master",
                          server.address, host_port(server.master_host, server.master_port));
    f.fix = "point dlock at the master, or use redis-sentinel://SENTINEL/MASTER to follow failovers";
  }
  return f;
}

Finding replication_finding(const ServerFacts &server) {
  Finding f{"redis.replicas", Severity::ok, "", ""};
  if (server.role != "master" || server.replicas.empty()) {
    f.found = fmt::format("{}: no replica that could be promoted", server.address);
    return f;
  }
  f.severity = Severity::warning;
  f.found = fmt::format("{}: {} replica(s) ({}): replication is asynchronous, so a replica promoted by a failover "
                        "may lack a lock its master just granted, and a second client then gets it while the first "
                        "still holds it",
                        server.address, server.replicas.size(), fmt::join(server.replicas, ", "));
  f.fix = "for locks that must never overlap use redlock:// over independent masters, or make failovers wait longer "
          "than the longest --ttl";
  return f;
}

std::vector<Finding> server_findings(const ServerFacts &server) {
  return {role_finding(server), eviction_finding(server), persistence_finding(server, false),
          replication_finding(server)};
}

Finding independence_finding(const std::vector<ServerFacts> &nodes) {
  Finding f{"redlock.independent-nodes", Severity::ok, "", ""};
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const ServerFacts &a = nodes[i];
    if (a.role == "replica") {
      std::string master = host_port(a.master_host, a.master_port);
      auto same = std::find_if(nodes.begin(), nodes.end(), [&](const ServerFacts &b) { return b.address == master; });
      problems.push_back(same != nodes.end() ? fmt::format("{} is a replica of node {}", a.address, master)
                                             : fmt::format("{} is a replica (of {})", a.address, master));
    }
    for (std::size_t j = 0; j < nodes.size(); ++j) {
      if (j == i) continue;
      const ServerFacts &b = nodes[j];
      if (j < i && !a.run_id.empty() && a.run_id == b.run_id)
        problems.push_back(fmt::format("{} and {} are one server (same run_id)", b.address, a.address));
      if (std::find(a.replicas.begin(), a.replicas.end(), b.address) != a.replicas.end() && b.role != "replica")
        problems.push_back(fmt::format("{} lists node {} as its replica", a.address, b.address));
    }
  }
  if (problems.empty()) {
    f.found = fmt::format("{} independent masters", nodes.size());
    return f;
  }
  f.severity = Severity::unsafe;
  f.found = fmt::format("{}: a majority that counts one server twice can grant a lock another majority holds",
                        fmt::join(problems, "; "));
  f.fix = "make every node an independent master (REPLICAOF NO ONE, no replicaof in its redis.conf) and list each "
          "server once";
  return f;
}

Finding clock_finding(const std::vector<std::string> &addresses,
                      const std::vector<std::optional<std::int64_t>> &offsets_us, Millis allowance) {
  Finding f{"redlock.clocks", Severity::ok, "", ""};
  std::optional<std::int64_t> low, high;
  std::size_t read = 0, low_at = 0, high_at = 0;
  for (std::size_t i = 0; i < offsets_us.size() && i < addresses.size(); ++i) {
    if (!offsets_us[i]) continue;
    ++read;
    if (!low || *offsets_us[i] < *low) low = offsets_us[i], low_at = i;
    if (!high || *offsets_us[i] > *high) high = offsets_us[i], high_at = i;
  }
  if (read < 2) {
    f.severity = Severity::warning;
    f.found = fmt::format("the clocks of {} node(s) could be read (TIME): not enough to compare", read);
    f.fix = "allow TIME for dlock's user on every node";
    return f;
  }
  auto spread = Millis((*high - *low) / 1000);
  if (spread <= allowance) {
    f.found = fmt::format("the nodes' clocks agree within {} (allowance {} for --ttl)", format_duration(spread),
                          format_duration(allowance));
    return f;
  }
  f.severity = Severity::warning;
  f.found = fmt::format("the clocks of {} and {} differ by {}, more than the drift allowance {}: a node whose clock "
                        "is stepped ends its locks early, and fences after a node lost its data rely on the clocks",
                        addresses[high_at], addresses[low_at], format_duration(spread), format_duration(allowance));
  f.fix = "keep every node's clock synchronised (chrony or systemd-timesyncd)";
  return f;
}

PingView ping_view(const std::string &address, const std::string &info, bool redlock) {
  PingView view;
  ServerFacts &facts = view.facts;
  facts.address = address;
  read_info(info, facts);
  view.description = fmt::format("{} {}", facts.version.empty() ? "redis ?" : facts.version, facts.role);
  if (facts.role != "master") {
    Finding role = role_finding(facts);
    view.error = role.found;
    if (redlock)
      view.error += "; each Redlock node must be an independent master";
    else if (!role.fix.empty())
      view.error += "; " + role.fix;
  }
  // Only a policy known to evict: a server whose INFO does not say (a
  // proxy, a look-alike) is doctor's to question, not every ping's.
  if (!facts.eviction_policy.empty()) {
    Finding finding = eviction_finding(facts);
    if (finding.severity != Severity::ok) say("warning: {}; {}", finding.found, finding.fix);
  }
  return view;
}

} // namespace dlock::backend::redis
