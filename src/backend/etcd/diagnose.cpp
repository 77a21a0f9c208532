#include "backend/etcd/diagnose.hpp"

#include "backend/etcd/gateway.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlock::backend::etcd {

namespace {

// Releases with a bug that can end a lease before its TTL, and so hand a
// held lock to a second client.
struct LeaseBug {
  const char *version;
  const char *issue;
  const char *what;
};
constexpr LeaseBug k_lease_bugs[] = {
    {"3.4.23", "etcd issue #15247",
     "every lease is revoked when the leader is stuck handling raft Ready (a slow fdatasync, high CPU)"},
};

std::string clip(std::string text) {
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text;
}

} // namespace

MemberStatus member_status_from(const std::string &endpoint, const Json &status) {
  MemberStatus member;
  member.endpoint = endpoint;
  member.answered = true;
  member.version = clip(string_in(status, "version"));
  member.leader = unsigned_in(status, "leader");
  const Json &header = object_in(status, "header");
  member.member_id = unsigned_in(header, "member_id");
  member.cluster_id = unsigned_in(header, "cluster_id");
  const Json &errors = array_in(status, "errors");
  for (const Json &error : errors)
    if (error.is_string() && member.errors.size() < 8) member.errors.push_back(clip(error.get<std::string>()));
  return member;
}

Finding version_finding(const MemberStatus &member) {
  Finding f{"etcd.version", Severity::ok, fmt::format("{}: etcd {}", member.endpoint, member.version), ""};
  for (const LeaseBug &bug : k_lease_bugs) {
    if (member.version != bug.version) continue;
    // A stall of the leader is what sets it off, not a setting: a warning,
    // not a guarantee that cannot hold.
    f.severity = Severity::warning;
    f.found = fmt::format("{}: etcd {} has a known lease bug ({}): {}; a lock whose lease is revoked early goes to "
                          "another client while its holder still runs",
                          member.endpoint, member.version, bug.issue, bug.what);
    f.fix = "upgrade etcd to the latest patch release of its series";
  }
  return f;
}

Finding members_finding(const std::vector<MemberStatus> &members) {
  std::size_t serving = 0;
  std::vector<std::string> problems;
  for (const MemberStatus &member : members) {
    if (!member.answered)
      problems.push_back(fmt::format("{}: {}", member.endpoint, clip(member.failure)));
    else if (member.leader == 0)
      problems.push_back(fmt::format("{}: no leader", member.endpoint));
    else if (!member.errors.empty())
      problems.push_back(fmt::format("{}: {}", member.endpoint, fmt::join(member.errors, ", ")));
    else
      ++serving;
  }
  Finding f{"etcd.members", Severity::ok, fmt::format("{} of {} members healthy", serving, members.size()), ""};
  if (problems.empty()) return f;
  // A member with a leader speaks for a cluster with a quorum, and the
  // gateway fails over to it; the URL may list only some of the members.
  f.severity = serving > 0 ? Severity::warning : Severity::unsafe;
  f.found += fmt::format(" ({}){}", fmt::join(problems, "; "),
                         f.severity == Severity::unsafe ? ": none of them can serve locks" : "");
  f.fix = "repair the unhealthy members (etcdctl endpoint health), or remove the ones that are gone from the URL";
  return f;
}

Finding cluster_finding(const std::vector<MemberStatus> &members) {
  Finding f{"etcd.one-cluster", Severity::ok, "every member that answered is of one cluster", ""};
  std::vector<std::string> clusters;
  for (const MemberStatus &member : members)
    if (member.answered) {
      std::string id = fmt::format("{:x}", member.cluster_id);
      if (std::find(clusters.begin(), clusters.end(), id) == clusters.end()) clusters.push_back(id);
    }
  if (clusters.size() <= 1) return f;
  f.severity = Severity::unsafe;
  f.found = fmt::format("the URL names members of {} clusters ({}): each has its own locks, so two clients can hold "
                        "one lock",
                        clusters.size(), fmt::join(clusters, ", "));
  f.fix = "list the members of one cluster only";
  return f;
}

Finding clock_finding(const std::vector<MemberStatus> &members, Millis limit) {
  Finding f{"etcd.clock", Severity::ok, "", ""};
  auto ms = [](std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<Millis>(t.time_since_epoch()).count();
  };
  long long widest = -1; // the widest offset window among members found in step (-1: none compared)
  for (const MemberStatus &member : members) {
    if (!member.answered || !member.clock.date) continue;
    // The member stamped its Date in [date, date + 1 s) of its clock,
    // while this host's clock was in [sent, received].
    long long low = *member.clock.date * 1000 - ms(member.clock.received);
    long long high = (*member.clock.date + 1) * 1000 - ms(member.clock.sent);
    long long off = low > limit.count() ? low : high < -limit.count() ? -high : 0;
    if (off == 0) {
      widest = std::max(widest, high - low);
      continue;
    }
    f.severity = Severity::warning;
    f.found = fmt::format("this host's clock is at least {} {} that of {}: leases do not depend on it (monotonic "
                          "clocks time them), but the expiry times status shows and the times in logs disagree "
                          "between hosts, and cron starts the same job on two such hosts {} apart (a --min-hold "
                          "must cover that)",
                          format_duration(Millis(off)), low > 0 ? "behind" : "ahead of", member.endpoint,
                          format_duration(Millis(off)));
    f.fix = "synchronise the clocks of this host and the members (chrony or systemd-timesyncd)";
    return f;
  }
  f.found = widest < 0 ? "not compared: no member's answer had a Date header"
                       : fmt::format("this host's clock agrees with the members' within {} (their Date headers "
                                     "have whole seconds)",
                                     format_duration(Millis(std::max<long long>(widest, limit.count()))));
  return f;
}

std::vector<Finding> diagnose_members(Gateway &gateway) {
  std::vector<MemberStatus> members;
  for (std::size_t i = 0; i < gateway.endpoints().size(); ++i) {
    try {
      members.push_back(member_status_from(gateway.endpoints()[i],
                                           gateway.call_endpoint(i, "/v3/maintenance/status", Json::object())));
      members.back().clock = gateway.last_clock();
    } catch (const Error &failure) {
      if (failure.code() == ExitCode::auth) throw; // the same credentials everywhere: 77
      MemberStatus member;
      member.endpoint = gateway.endpoints()[i];
      member.failure = failure.what();
      members.push_back(std::move(member));
    }
  }
  if (std::none_of(members.begin(), members.end(), [](const MemberStatus &m) { return m.answered; }))
    throw UnavailableError(fmt::format("no etcd member answered: {}", members.front().failure));
  std::vector<Finding> out{members_finding(members), cluster_finding(members)};
  for (const MemberStatus &member : members)
    if (member.answered) out.push_back(version_finding(member));
  out.push_back(clock_finding(members));
  return out;
}

} // namespace dlock::backend::etcd
