// Parsers of outside input that had no tests of their own, and what
// tests/fuzz found in them (one test per finding, named after it).
#include "backend/file/proc_locks.hpp"
#include "backend/file/record.hpp"
#include "backend/postgres/pg_backend.hpp"
#include "backend/redis/common.hpp"
#include "backend/redis/resp.hpp"
#include "backend/zookeeper/four_letter.hpp"
#include "backend/zookeeper/paths.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/holder_json.hpp"
#include "redis_replies.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sys/sysmacros.h>

using namespace dlock;
using namespace std::chrono_literals;

TEST_CASE("a duration over a minute with milliseconds prints in a form that reads back the same") {
  // Found by tests/fuzz/duration: "3300.3" (55 min 0.3 s) printed as "55m".
  for (Millis value : {3'300'300ms, 60'500ms, 3'600'001ms, 5'400'000ms, 90'000ms, 61'999ms}) {
    INFO(value.count());
    CHECK(parse_duration(format_duration(value), "--ttl") == value);
  }
  CHECK(format_duration(60'500ms) == "1m0.5s");
  CHECK(format_duration(5'400'000ms) == "1h30m");
}

TEST_CASE("a holder record with a fractional or out-of-range number is no holder") {
  // Found by tests/fuzz/holder_record: a pid of 4.2e21 was converted to an
  // integer (undefined behaviour), and a since_ms beyond the clock's range
  // overflowed it.
  CHECK_FALSE(holder_in(nlohmann::json::parse(R"({"host":"h","pid":4.2e21,"user":"u","command":"c"})")));
  CHECK_FALSE(holder_in(nlohmann::json::parse(R"({"host":"h","pid":42.5})")));
  CHECK_FALSE(holder_in(nlohmann::json::parse(R"({"pid":1,"since_ms":9223372036854775807})")));
  CHECK_FALSE(holder_in(nlohmann::json::parse(R"({"pid":18446744073709551615})")));
  CHECK_FALSE(holder_in(nlohmann::json::parse(R"({"pid":1,"host":5})")));
  CHECK_FALSE(backend::zookeeper::decode_holder(R"({"pid":1e30})"));
  CHECK_FALSE(backend::file::decode_record(R"({"fence":1,"host":"h","pid":1,"user":"u","command":"c",)"
                                           R"("since_ms":9223372036854775807,"ttl_ms":1,"renewed_ms":1})"));
  auto holder = holder_in(nlohmann::json::parse(R"({"pid":42,"host":"h","since_ms":1700000000000})"));
  REQUIRE(holder);
  CHECK(holder->pid == 42);
  CHECK(holder->user.empty());
  CHECK(to_unix_ms(holder->since) == 1700000000000);
}

TEST_CASE("the holder note in a PostgreSQL session's query text") {
  auto note = backend::postgres::note_in(R"(SELECT 1 /* dlock {"pid":4,"host":"h"} */)");
  REQUIRE(note);
  CHECK((*note)["pid"] == 4);
  CHECK_FALSE(backend::postgres::note_in("SELECT 1"));
  CHECK_FALSE(backend::postgres::note_in("SELECT 1 /* dlock {"));
  CHECK_FALSE(backend::postgres::note_in(R"( */ /* dlock {"pid":4})"));
  CHECK_FALSE(backend::postgres::note_in("/* dlock {[1]} */"));
}

TEST_CASE("/proc/locks lines: granted and blocked flock(2) locks, nothing else") {
  using backend::file::parse_proc_locks_line;
  auto granted = parse_proc_locks_line("12: FLOCK  ADVISORY  WRITE 4242 fe:01:10780673 0 EOF");
  REQUIRE(granted);
  CHECK_FALSE(granted->blocked);
  CHECK(granted->pid == 4242);
  CHECK(granted->device == makedev(0xfe, 1));
  CHECK(granted->inode == 10780673);
  auto blocked = parse_proc_locks_line("12: -> FLOCK  ADVISORY  WRITE 4243 fe:01:10780673 0 EOF");
  REQUIRE(blocked);
  CHECK(blocked->blocked);
  CHECK(blocked->pid == 4243);
  for (const char *other : {"3: POSIX  ADVISORY  READ 99 08:01:1234 0 EOF", "4: OFDLCK ADVISORY WRITE -1 08:01:5 0 EOF",
                            "5: FLOCK ADVISORY WRITE 1 zz", "5: FLOCK ADVISORY WRITE 1 08", "5: FLOCK ADVISORY WRITE 1",
                            "5: FLOCK", "", "garbage"}) {
    INFO(other);
    CHECK_FALSE(parse_proc_locks_line(other));
  }
}

TEST_CASE("ZooKeeper's srvr answer: version and mode, or why the server cannot serve locks") {
  using backend::zookeeper::read_srvr;
  auto leader = read_srvr("Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2023\nMode: leader\n");
  CHECK(leader.version == "3.8.0 (leader)");
  CHECK(leader.error.empty());
  auto read_only = read_srvr("Zookeeper version: 3.9.1, built\r\nMode: read-only\r\n");
  CHECK(read_only.version == "3.9.1 (read-only)");
  CHECK(read_only.error == "read-only: cannot serve locks");
  CHECK(read_srvr("This ZooKeeper instance is not currently serving requests\n").error ==
        "not serving requests (no quorum?)");
  CHECK(read_srvr("srvr is not executed because it is not in the whitelist.\n").version ==
        "unknown (srvr is not in 4lw.commands.whitelist)");
  CHECK(read_srvr("").version.empty());
  CHECK(backend::zookeeper::line_value("a\nMode:  follower \r\nb", "Mode:") == "follower");
  CHECK(backend::zookeeper::line_value("Mode:", "Mode:").empty());
}

TEST_CASE("a Redis array header with a huge element count is a protocol error, not a huge allocation") {
  // Found by tests/fuzz/redis_reply: "*77777777\r\n" made hiredis allocate
  // 622 MB of element pointers before a single element had arrived.
  backend::redis::ReplyParser parser;
  std::string header = "*100000000\r\n";
  parser.feed(header.data(), header.size());
  CHECK_THROWS_AS(parser.next(), UnavailableError);

  backend::redis::ReplyParser fine;
  std::string reply = "*2\r\n$1\r\na\r\n:7\r\n";
  fine.feed(reply.data(), reply.size());
  auto parsed = fine.next();
  REQUIRE(parsed);
  CHECK(parsed->elements.size() == 2);
  CHECK(parsed->elements[1].integer == 7);
}

TEST_CASE("a Redis holder's since beyond what the system clock holds is unknown, not an overflow") {
  // Found by tests/fuzz/redis_status: "since" 9692712313647 (the year 2277)
  // overflowed the clock's nanoseconds.
  auto fields = [](const std::string &since) { return redis_replies::texts({"pid", "42", "since", since}); };
  CHECK(backend::redis::holder_from(fields("9692712313647")).since.time_since_epoch().count() == 0);
  CHECK(backend::redis::holder_from(fields("-9692712313647")).since.time_since_epoch().count() == 0);
  CHECK(to_unix_ms(backend::redis::holder_from(fields("1796292313647")).since) == 1796292313647);
  CHECK(backend::redis::holder_from(fields("1796292313647")).pid == 42);
}
