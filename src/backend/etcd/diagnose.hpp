#pragma once

#include "backend/backend.hpp"
#include "backend/etcd/gateway.hpp"
#include "backend/etcd/reply.hpp"

#include <cstdint>
#include <string>
#include <vector>

// The checks of `dlock doctor` for etcd: each member's answer to
// /v3/maintenance/status, read by a pure function (unit-tested, fuzzed).
namespace dlock::backend::etcd {

struct MemberStatus {
  std::string endpoint;
  bool answered = false;
  std::string failure; // why not
  std::string version;
  std::uint64_t leader = 0, member_id = 0, cluster_id = 0;
  std::vector<std::string> errors; // the member's own alarms and errors
  ServerClock clock;               // its Date header, and when it came
};
MemberStatus member_status_from(const std::string &endpoint, const Json &status);

// etcd.version: a release with a known lease bug.
Finding version_finding(const MemberStatus &member);
// etcd.members: members that cannot serve (unreachable, no leader, alarms).
Finding members_finding(const std::vector<MemberStatus> &members);
// etcd.one-cluster: the URL names members of more than one cluster.
Finding cluster_finding(const std::vector<MemberStatus> &members);

// etcd.clock: this host's wall clock against each member's, read off the
// Date header of its answer (whole seconds: an offset counts when it is
// more than `limit` for certain, whatever the rounding and the round trip).
Finding clock_finding(const std::vector<MemberStatus> &members, Millis limit = Millis(1000));

// Every check: etcd.members, etcd.one-cluster, etcd.version per member,
// etcd.clock. Throws UnavailableError when no member answers.
std::vector<Finding> diagnose_members(Gateway &gateway);

} // namespace dlock::backend::etcd
