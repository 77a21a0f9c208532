#pragma once

#include "backend/backend.hpp"
#include "core/duration.hpp"
#include "net/net.hpp"

#include <optional>
#include <string>
#include <vector>

// The checks of `dlock doctor` for ZooKeeper: each member's answer to the
// four-letter word "conf", read by a pure function (unit-tested, fuzzed).
namespace dlock::backend::zookeeper {

// What a member's "conf" answer says ("key=value" lines); a field it does
// not give (a standalone server has no syncLimit) stays unset. `error`:
// why there is nothing to read (the word is not in 4lw.commands.whitelist).
struct ServerConf {
  std::optional<long long> tick_ms, sync_limit, max_client_cnxns, min_session_ms, max_session_ms;
  std::string error;
};
ServerConf read_conf(const std::string &answer);

// The session timeout a client asking for `ttl` gets from `conf`:
// clamped to [minSessionTimeout, maxSessionTimeout] (ZooKeeper's own
// defaults, 2 and 20 ticks, where the answer does not say).
Millis negotiated_session(const ServerConf &conf, Millis ttl);

// zk.sync-limit: how long a member cut off from its leader keeps serving
// (syncLimit x tickTime) against the session timeout `ttl` negotiates.
Finding sync_limit_finding(const std::string &address, const ServerConf &conf, Millis ttl);
// zk.max-client-cnxns: connections one client host may open.
Finding max_client_cnxns_finding(const std::string &address, const ServerConf &conf);

// Every check of the servers at `addresses`, each asked at once within
// `timeout`: zk.members (from ping's srvr), then per member zk.conf (when
// it cannot be read), zk.sync-limit and zk.max-client-cnxns. Throws
// UnavailableError when no member answers.
std::vector<Finding> diagnose_servers(const std::vector<net::Address> &addresses, Millis ttl, Millis timeout);

} // namespace dlock::backend::zookeeper
