// The pure parts of `dlock doctor`: reading what servers say about
// themselves, and the verdict of each check on made-up answers.
#include "backend/etcd/diagnose.hpp"
#include "backend/file/diagnose.hpp"
#include "backend/postgres/pg_diagnose.hpp"
#include "backend/redis/diagnose.hpp"
#include "backend/zookeeper/diagnose.hpp"

#include <catch2/catch.hpp>

using namespace dlock;
using namespace dlock::backend;
using namespace std::chrono_literals;

namespace {

redis::ServerFacts info(const std::string &address, const std::string &text) {
  redis::ServerFacts facts;
  facts.address = address;
  redis::read_info(text, facts);
  return facts;
}

const char *k_master_info = "# Server\r\nredis_version:7.0.15\r\nrun_id:aaaa\r\n# Memory\r\nmaxmemory:0\r\n"
                            "maxmemory_policy:noeviction\r\n# Persistence\r\naof_enabled:1\r\n# Replication\r\n"
                            "role:master\r\nconnected_slaves:0\r\n";

} // namespace

TEST_CASE("INFO gives the role, eviction policy, persistence and replicas of a Redis server") {
  auto facts = info("127.0.0.1:6379", "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6380\r\n"
                                      "run_id:bbbb\r\nmaxmemory:104857600\r\nmaxmemory_policy:allkeys-lru\r\n"
                                      "aof_enabled:0\r\nslave0:ip=10.0.0.2,port=6381,state=online,offset=1,lag=0\r\n"
                                      "slaveX:ip=1.1.1.1,port=1\r\n");
  CHECK(facts.role == "replica");
  CHECK(facts.master_host == "10.0.0.1");
  CHECK(facts.master_port == 6380);
  CHECK(facts.run_id == "bbbb");
  CHECK(facts.maxmemory == 104857600);
  CHECK(facts.eviction_policy == "allkeys-lru");
  CHECK_FALSE(facts.aof);
  CHECK(facts.replicas == std::vector<std::string>{"10.0.0.2:6381"});
}

TEST_CASE("an evicting policy is unsafe with a maxmemory, a warning without one") {
  auto facts = info("a:1", "maxmemory_policy:volatile-lru\r\nmaxmemory:0\r\n");
  CHECK(redis::eviction_finding(facts).severity == Severity::warning);
  facts.maxmemory = 1 << 20;
  Finding finding = redis::eviction_finding(facts);
  CHECK(finding.severity == Severity::unsafe);
  CHECK(finding.fix.find("noeviction") != std::string::npos);
  CHECK(redis::eviction_finding(info("a:1", k_master_info)).severity == Severity::ok);
}

TEST_CASE("no persistence is unsafe on one Redis, a warning on a Redlock node; snapshots only a warning") {
  auto facts = info("a:1", "aof_enabled:0\r\n");
  facts.save = "";
  CHECK(redis::persistence_finding(facts, false).severity == Severity::unsafe);
  CHECK(redis::persistence_finding(facts, true).severity == Severity::warning);
  facts.save = "3600 1";
  CHECK(redis::persistence_finding(facts, false).severity == Severity::warning);
  facts.aof = true;
  CHECK(redis::persistence_finding(facts, false).severity == Severity::ok);
  facts.aof = false;
  facts.save.reset();
  facts.save_error = "CONFIG GET save refused";
  CHECK(redis::persistence_finding(facts, false).severity == Severity::warning);
}

TEST_CASE("a replica is unsafe, a master with replicas a warning, a lone master ok") {
  auto master = info("a:1", k_master_info);
  CHECK(redis::role_finding(master).severity == Severity::ok);
  CHECK(redis::replication_finding(master).severity == Severity::ok);
  master.replicas = {"b:2"};
  CHECK(redis::replication_finding(master).severity == Severity::warning);
  auto replica = info("b:2", "role:slave\r\nmaster_host:a\r\nmaster_port:1\r\n");
  CHECK(redis::role_finding(replica).severity == Severity::unsafe);
}

TEST_CASE("Redlock nodes that are one server or replicate each other are not independent") {
  auto a = info("h:1", k_master_info), b = info("h:2", k_master_info), c = info("h:3", k_master_info);
  b.run_id = "bbbb";
  c.run_id = "cccc";
  CHECK(redis::independence_finding({a, b, c}).severity == Severity::ok);
  auto replica = info("h:3", "role:slave\r\nmaster_host:h\r\nmaster_port:1\r\nrun_id:dddd\r\n");
  Finding finding = redis::independence_finding({a, b, replica});
  CHECK(finding.severity == Severity::unsafe);
  CHECK(finding.found.find("h:3 is a replica of node h:1") != std::string::npos);
  auto twice = b;
  twice.address = "h:4";
  CHECK(redis::independence_finding({a, b, twice}).found.find("same run_id") != std::string::npos);
}

TEST_CASE("Redlock clocks are compared against the drift allowance") {
  std::vector<std::string> nodes = {"h:1", "h:2", "h:3"};
  CHECK(redis::clock_finding(nodes, {0, 1'000, -1'000}, 5ms).severity == Severity::ok);
  Finding far = redis::clock_finding(nodes, {0, 9'000, std::nullopt}, 5ms);
  CHECK(far.severity == Severity::warning);
  CHECK(far.found.find("h:2 and h:1") != std::string::npos);
  CHECK(redis::clock_finding(nodes, {0, std::nullopt, std::nullopt}, 5ms).severity == Severity::warning);
}

TEST_CASE("ZooKeeper's conf answer gives tick, syncLimit, maxClientCnxns and the session bounds") {
  auto conf = zookeeper::read_conf("clientPort=2181\ntickTime=100\nmaxClientCnxns=5\nminSessionTimeout=200\n"
                                   "maxSessionTimeout=60000\ninitLimit=50\nsyncLimit=30\n");
  REQUIRE(conf.error.empty());
  CHECK(conf.tick_ms == 100);
  CHECK(conf.sync_limit == 30);
  CHECK(conf.max_client_cnxns == 5);
  CHECK(zookeeper::negotiated_session(conf, 2s) == 2s);
  CHECK(zookeeper::negotiated_session(conf, 100ms) == 200ms);
  CHECK(zookeeper::negotiated_session(conf, 90s) == 60s);
  CHECK(zookeeper::sync_limit_finding("z:1", conf, 2s).severity == Severity::warning);
  CHECK(zookeeper::sync_limit_finding("z:1", conf, 10s).severity == Severity::ok);
  CHECK(zookeeper::max_client_cnxns_finding("z:1", conf).severity == Severity::warning);
  conf.max_client_cnxns = 0;
  CHECK(zookeeper::max_client_cnxns_finding("z:1", conf).severity == Severity::ok);
  CHECK_FALSE(zookeeper::read_conf("conf is not executed because it is not in the whitelist.\n").error.empty());
  CHECK_FALSE(zookeeper::read_conf("garbage").error.empty());
  auto standalone = zookeeper::read_conf("tickTime=2000\nmaxClientCnxns=60\n");
  CHECK(zookeeper::sync_limit_finding("z:1", standalone, 2s).severity == Severity::ok);
}

TEST_CASE("PostgreSQL settings shorter than T are warnings, off or longer ones ok") {
  std::map<std::string, postgres::Setting> settings = {
      {"idle_session_timeout", {"1000", "ms"}}, {"idle_in_transaction_session_timeout", {"0", "ms"}},
      {"tcp_keepalives_idle", {"1", "s"}},      {"tcp_keepalives_interval", {"1", "s"}},
      {"tcp_keepalives_count", {"1", ""}},      {"tcp_user_timeout", {"60000", "ms"}}};
  auto findings = postgres::setting_findings(settings, 10s);
  REQUIRE(findings.size() == 4);
  CHECK(findings[0].check == "postgres.idle_session_timeout");
  CHECK(findings[0].severity == Severity::warning);
  CHECK(findings[1].severity == Severity::ok);
  CHECK(findings[2].check == "postgres.tcp_keepalives");
  CHECK(findings[2].severity == Severity::warning);
  CHECK(findings[3].severity == Severity::ok);
  for (const Finding &finding : postgres::setting_findings({}, 10s))
    CHECK(finding.severity == Severity::ok);
}

TEST_CASE("etcd members: a known lease bug, unhealthy members, two clusters") {
  auto status =
      nlohmann::json::parse(R"({"header":{"cluster_id":"11","member_id":"2"},"version":"3.4.23","leader":"2"})");
  etcd::MemberStatus healthy = etcd::member_status_from("http://a:1", status);
  CHECK(healthy.version == "3.4.23");
  CHECK(healthy.cluster_id == 11);
  CHECK(etcd::version_finding(healthy).found.find("#15247") != std::string::npos);
  healthy.version = "3.5.17";
  CHECK(etcd::version_finding(healthy).severity == Severity::ok);
  etcd::MemberStatus gone;
  gone.endpoint = "http://b:1";
  gone.failure = "connection refused";
  CHECK(etcd::members_finding({healthy}).severity == Severity::ok);
  CHECK(etcd::members_finding({healthy, gone}).severity == Severity::warning);
  CHECK(etcd::members_finding({gone}).severity == Severity::unsafe);
  auto full = etcd::member_status_from(
      "http://c:1", nlohmann::json::parse(R"({"header":{"member_id":"3"},"leader":"2","errors":["NOSPACE"]})"));
  Finding alarmed = etcd::members_finding({healthy, full});
  CHECK(alarmed.severity == Severity::warning);
  CHECK(alarmed.found.find("http://c:1: NOSPACE") != std::string::npos);
  etcd::MemberStatus other = healthy;
  other.cluster_id = 12;
  CHECK(etcd::cluster_finding({healthy, other}).severity == Severity::unsafe);
  CHECK(etcd::cluster_finding({healthy, gone}).severity == Severity::ok);
}

TEST_CASE("a lock directory on NFS, SMB or FUSE is unsafe, on a local file system ok") {
  CHECK(file::remote_filesystem(0x6969) == "NFS");
  CHECK(file::remote_filesystem(0x65735546) == "FUSE");
  CHECK_FALSE(file::remote_filesystem(0xEF53)); // ext4
  CHECK(file::filesystem_finding("/d", 0xFF534D42).severity == Severity::unsafe);
  CHECK(file::filesystem_finding("/d", 0x01021994).severity == Severity::ok); // tmpfs
}

TEST_CASE("etcd clock: this host against the members' Date headers, whole seconds and the round trip allowed for") {
  using namespace std::chrono;
  auto at = [](long long ms) { return system_clock::time_point(milliseconds(ms)); };
  etcd::MemberStatus member;
  member.endpoint = "http://a:1";
  member.answered = true;
  CHECK(etcd::clock_finding({member}).found.find("not compared") != std::string::npos);
  // Sent at 100.200 s, answered at 100.300 s, Date 100: the member's clock
  // read 100.000-100.999 in that time: in step.
  member.clock = {100, at(100'200), at(100'300)};
  CHECK(etcd::clock_finding({member}).severity == Severity::ok);
  // Date 102: at least 1.7 s ahead of this host: this host is behind.
  member.clock = {102, at(100'200), at(100'300)};
  Finding behind = etcd::clock_finding({member});
  CHECK(behind.severity == Severity::warning);
  CHECK(behind.found.find("1.7s behind that of http://a:1") != std::string::npos);
  CHECK(behind.fix.find("chrony") != std::string::npos);
  // Date 98: at most 98.999 while this host read 100.2: this host is ahead.
  member.clock = {98, at(100'200), at(100'300)};
  CHECK(etcd::clock_finding({member}).found.find("1.2s ahead of") != std::string::npos);
  // A slow round trip leaves room: 2 s in flight, Date 101.
  member.clock = {101, at(100'000), at(102'000)};
  CHECK(etcd::clock_finding({member}).severity == Severity::ok);
  // A member that did not answer is not compared.
  member.answered = false;
  member.clock = {200, at(100'000), at(100'001)};
  CHECK(etcd::clock_finding({member}).severity == Severity::ok);
}

TEST_CASE("ping says of a server what doctor's role check says") {
  redis::PingView master = redis::ping_view("a:1", k_master_info, false);
  CHECK(master.description == "redis 7.0.15 master");
  CHECK(master.error.empty());
  const char *replica = "redis_version:7.0.15\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6380\r\n";
  redis::PingView one = redis::ping_view("a:1", replica, false);
  CHECK(one.description == "redis 7.0.15 replica");
  CHECK(one.error ==
        redis::role_finding(info("a:1", replica)).found + "; " + redis::role_finding(info("a:1", replica)).fix);
  CHECK(one.error.find("read-only replica of 10.0.0.1:6380") != std::string::npos);
  CHECK(one.error.find("redis-sentinel://") != std::string::npos);
  redis::PingView node = redis::ping_view("a:1", replica, true);
  CHECK(node.error.find("read-only replica") != std::string::npos);
  CHECK(node.error.find("independent master") != std::string::npos);
  CHECK(redis::ping_view("a:1", "", false).error.find("does not give the role") != std::string::npos);
}
