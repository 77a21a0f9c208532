#include "backend/redis/diagnose.hpp"
#include "backend/redis/nodes.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace dlock::backend::redis {

std::vector<Finding> diagnose_nodes(Nodes &nodes, Millis drift_allowance, Millis timeout) {
  // Connected first, so that the round trip that reads the clocks is one
  // round trip, not a connection and a login too.
  std::string ping;
  append_command(ping, {"PING"});
  nodes.exchange_all(ping, 1, Clock::now() + timeout);
  auto wall_sent = std::chrono::system_clock::now();
  auto sent = Clock::now();
  auto answers = nodes.exchange_all(facts_request(), k_fact_replies, sent + timeout);
  Millis slowest{0};
  std::vector<ServerFacts> answered;
  std::vector<std::string> addresses, missing;
  std::vector<std::optional<std::int64_t>> offsets;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i].answered()) {
      missing.push_back(fmt::format("{} ({})", nodes.address(i), answers[i].error));
      continue;
    }
    ServerFacts facts = facts_from(nodes.address(i), answers[i].replies);
    // The node read its clock somewhere in the round trip: halfway is off
    // by at most half of it, so two nodes' offsets by the slowest one, which
    // the allowance gets on top.
    auto halfway =
        wall_sent + std::chrono::duration_cast<std::chrono::system_clock::duration>((answers[i].at - sent) / 2);
    auto ours = std::chrono::duration_cast<std::chrono::microseconds>(halfway.time_since_epoch()).count();
    offsets.push_back(facts.time_us ? std::optional<std::int64_t>(*facts.time_us - ours) : std::nullopt);
    addresses.push_back(facts.address);
    answered.push_back(std::move(facts));
  }
  if (answered.empty()) throw UnavailableError(fmt::format("no Redlock node answered: {}", fmt::join(missing, "; ")));
  Finding quorum{"redlock.quorum", Severity::ok, "", ""};
  if (missing.empty()) {
    quorum.found = fmt::format("all {} nodes answer", nodes.size());
  } else {
    quorum.severity = answered.size() >= nodes.majority() ? Severity::warning : Severity::unsafe;
    quorum.found = fmt::format("{} of {} nodes answer ({} needed); no answer from {}", answered.size(), nodes.size(),
                               nodes.majority(), fmt::join(missing, "; "));
    quorum.fix = "repair or replace the nodes that do not answer";
  }
  std::vector<Finding> out{quorum, independence_finding(answered),
                           clock_finding(addresses, offsets, drift_allowance + slowest)};
  for (const ServerFacts &node : answered)
    out.push_back(eviction_finding(node));
  for (const ServerFacts &node : answered)
    out.push_back(persistence_finding(node, true));
  return out;
}

} // namespace dlock::backend::redis
