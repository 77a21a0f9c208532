// What `dlock doctor` reads from servers: Redis's INFO, ZooKeeper's answer
// to the four-letter word "conf", etcd's /v3/maintenance/status. The first
// byte picks the parser; the checks built on each answer must neither
// crash nor quote more than they were given.
#include "backend/etcd/diagnose.hpp"
#include "backend/redis/diagnose.hpp"
#include "backend/zookeeper/diagnose.hpp"

#include "core/error.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace dlock::backend;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] % 3) {
  case 0: {
    redis::ServerFacts facts;
    facts.address = "127.0.0.1:6379";
    redis::read_info(text, facts);
    if (facts.replicas.size() > 64) std::abort();
    for (const Finding &finding : redis::server_findings(facts))
      if (finding.found.size() > 4 * text.size() + 1024) std::abort();
    redis::independence_finding({facts, facts});
    break;
  }
  case 1: {
    zookeeper::ServerConf conf = zookeeper::read_conf(text);
    if (zookeeper::negotiated_session(conf, dlock::Millis(30'000)).count() < 0) std::abort();
    zookeeper::sync_limit_finding("127.0.0.1:2181", conf, dlock::Millis(2'000));
    zookeeper::max_client_cnxns_finding("127.0.0.1:2181", conf);
    break;
  }
  default: {
    auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded()) return 0;
    try {
      etcd::MemberStatus member = etcd::member_status_from("http://127.0.0.1:2379", doc);
      if (member.version.size() > 210 || member.errors.size() > 8) std::abort();
      etcd::version_finding(member);
      etcd::members_finding({member, member});
      etcd::cluster_finding({member});
    } catch (const dlock::Error &) {
      // A document of the wrong shape is refused, as from a server.
    }
    break;
  }
  }
  return 0;
}
