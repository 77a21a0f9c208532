#pragma once

#include "backend/backend.hpp"
#include "backend/redis/connection.hpp"
#include "backend/redis/resp.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// The checks of `dlock doctor` (and ping's warnings) for Redis and Redlock:
// what INFO, CONFIG GET save and TIME say about each server, read by pure
// functions (unit-tested and fuzzed), and one function per check.
namespace dlock::backend::redis {

// What one server says about itself.
struct ServerFacts {
  std::string address; // as the URL names it
  std::string version;
  std::string role; // "master" or "replica" ("slave" in INFO)
  std::string run_id;
  std::string eviction_policy;
  long long maxmemory = 0;
  bool aof = false;
  std::optional<std::string> save; // CONFIG GET save; nullopt: not readable
  std::string save_error;          // why not
  std::string master_host;         // a replica's master
  int master_port = 0;
  std::vector<std::string> replicas;   // a master's connected replicas, "ip:port"
  std::optional<std::int64_t> time_us; // TIME, in µs since the epoch
};

// INFO's fields (every default section) into `facts`; nothing else is
// touched. Unknown or malformed lines are ignored.
void read_info(const std::string &info, ServerFacts &facts);

// The requests diagnose sends each server, in one write, and what their
// replies say: INFO, CONFIG GET save, TIME.
inline constexpr std::size_t k_fact_replies = 3;
std::string facts_request();
ServerFacts facts_from(const std::string &address, const std::vector<Reply> &replies);

// One check each.
Finding eviction_finding(const ServerFacts &server);                  // redis.maxmemory-policy
Finding persistence_finding(const ServerFacts &server, bool redlock); // redis.persistence
Finding role_finding(const ServerFacts &server);                      // redis.role
Finding replication_finding(const ServerFacts &server);               // redis.replicas

// The checks of one Redis server (redis://): role, eviction, persistence,
// replicas.
std::vector<Finding> server_findings(const ServerFacts &server);

// Redlock: nodes that are one server or replicate each other
// (redlock.independent-nodes), and clocks that disagree by more than the
// drift allowance for `ttl` (redlock.clocks). `offsets_us[i]`: node i's
// TIME minus the client's clock halfway through its round trip.
Finding independence_finding(const std::vector<ServerFacts> &nodes);
Finding clock_finding(const std::vector<std::string> &addresses,
                      const std::vector<std::optional<std::int64_t>> &offsets_us, Millis allowance);

// Every check of a Redlock URL's nodes (redlock_diagnose.cpp), asked at
// once within `timeout`: whether a majority answers (redlock.quorum), the
// nodes' independence and clocks, and each node's eviction and persistence.
// Throws UnavailableError when no node answers.
class Nodes;
std::vector<Finding> diagnose_nodes(Nodes &nodes, Millis drift_allowance, Millis timeout);

// ping's view of the server at `address` from its INFO text, with
// doctor's words: its line ("redis 7.0.15 master"), and why locks cannot
// be taken there (role_finding() of a replica; empty when they can). A
// warning (one line on stderr) when eviction_finding() is not ok for a
// policy known to evict.
struct PingView {
  ServerFacts facts;
  std::string description;
  std::string error;
};
PingView ping_view(const std::string &address, const std::string &info, bool redlock);

} // namespace dlock::backend::redis
