#include "backend/etcd/reply.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace dlock::backend::etcd;
using namespace std::chrono_literals;

TEST_CASE("base64 matches RFC 4648's test vectors both ways") {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto &[plain, encoded] : vectors) {
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_decode(encoded) == plain);
  }
}

TEST_CASE("base64 keeps every byte and reads the URL-safe alphabet and missing padding") {
  std::string bytes;
  for (int i = 0; i < 256; ++i)
    bytes += static_cast<char>(i);
  CHECK(base64_decode(base64_encode(bytes)) == bytes);
  CHECK(base64_encode("\xfb\xff") == "+/8=");
  CHECK(base64_decode("-_8") == "\xfb\xff");
  CHECK(base64_decode("Zm9vYg") == "foob");
  CHECK(base64_decode("Zm9v\nYmFy") == "foobar");
}

TEST_CASE("numbers in etcd's answers: strings or integers that fit, anything else is 0") {
  Json doc = Json::parse(R"({"a": "42", "b": 7, "c": "-3", "d": "12abc", "e": " 5", "f": 1.5, "g": true,
                             "h": "99999999999999999999", "i": 18446744073709551615, "j": "18446744073709551615",
                             "k": {"x": 1}})");
  CHECK(number_in(doc, "a") == 42);
  CHECK(number_in(doc, "b") == 7);
  CHECK(number_in(doc, "c") == -3);
  for (const char *zero : {"d", "e", "f", "g", "h", "i", "k", "missing"})
    CHECK(number_in(doc, zero) == 0);
  CHECK(unsigned_in(doc, "i") == 18446744073709551615u);
  CHECK(unsigned_in(doc, "j") == 18446744073709551615u);
  CHECK(unsigned_in(doc, "c") == 0);
  CHECK(number_in(Json::array({1, 2}), "a") == 0);
  CHECK(number_in(Json("text"), "a") == 0);
}

TEST_CASE("a lease TTL too large for milliseconds is capped, not overflowed") {
  // Found by tests/fuzz/etcd_reply: TTL * 1000 overflowed int64.
  CHECK(seconds_in(Json::parse(R"({"TTL": "30"})"), "TTL") == 30s);
  CHECK(seconds_in(Json::parse(R"({"TTL": "-1"})"), "TTL") == -1s);
  CHECK(seconds_in(Json::parse(R"({"TTL": "9223372036854775807"})"), "TTL").count() > 0);
  CHECK(seconds_in(Json::parse(R"({"TTL": "-9223372036854775807"})"), "TTL").count() < 0);
}

TEST_CASE("fields of the wrong type read as absent") {
  Json doc = Json::parse(R"({"s": 5, "o": [1], "a": {"x": 1}, "good": "yes"})");
  CHECK(string_in(doc, "s").empty());
  CHECK(string_in(doc, "good") == "yes");
  CHECK(object_in(doc, "o").empty());
  CHECK(object_in(doc, "o").is_object());
  CHECK(array_in(doc, "a").is_array());
  CHECK(array_in(doc, "a").empty());
  CHECK(string_in(Json(3), "s").empty());
}

TEST_CASE("an etcd refusal with a code or message of another type is still a refusal") {
  // The old code threw nlohmann's type_error out of the gateway.
  Refusal refusal = refusal_in(Json::parse(R"({"code": "14", "message": 3, "error": "no leader"})"), 503);
  CHECK(refusal.code == 0);
  CHECK(refusal.message == "no leader");
  refusal = refusal_in(Json::parse(R"({"code": 14, "message": "etcdserver: leader changed"})"), 503);
  CHECK(refusal.code == 14);
  CHECK(refusal.message == "etcdserver: leader changed");
  refusal = refusal_in(Json::parse("[1]"), 502);
  CHECK(refusal.code == 0);
  CHECK(refusal.message == "HTTP status 502");
  CHECK(refusal_in(Json::parse(R"({"code": 99999999999})"), 500).code == 0);
}

TEST_CASE("watch lines: events, stream errors, cancellation, and garbage that is none of them") {
  WatchLine line = parse_watch_line(
      R"({"result":{"events":[{"type":"DELETE","kv":{"key":"ZGxvY2svYQ==","mod_revision":"42"}},{"kv":{"key":"Yg=="}}]}})");
  REQUIRE(line.kind == WatchLine::Kind::events);
  REQUIRE(line.events.size() == 2);
  CHECK(line.events[0].kind == WatchEvent::Kind::deleted);
  CHECK(line.events[0].key == "dlock/a");
  CHECK(line.events[0].mod_revision == 42);
  CHECK(line.events[1].kind == WatchEvent::Kind::put);

  line = parse_watch_line(R"({"error":{"message":"etcdserver: no leader"}})");
  CHECK(line.kind == WatchLine::Kind::error);
  CHECK(line.error.find("no leader") != std::string::npos);
  // Invalid UTF-8 inside the error (escaped, so the JSON parses) is printed, not thrown.
  CHECK(parse_watch_line(R"({"error":"\udcff"})").kind != WatchLine::Kind::events);

  line = parse_watch_line(R"({"result":{"canceled":true,"compact_revision":"7"}})");
  CHECK(line.kind == WatchLine::Kind::canceled);
  CHECK(line.compact_revision == 7);

  // Each of these threw nlohmann's type_error before.
  for (const char *garbage : {R"({"result": 5})", R"({"result":{"canceled":"yes"}})", R"({"result":{"events":7}})",
                              R"({"result":{"events":[5]}})", R"({"result":{"events":[{"kv":{"key":5}}]}})",
                              R"({"result":{"events":[{"type":1,"kv":[]}]}})", "not json", "[]", ""}) {
    INFO(garbage);
    WatchLine parsed = parse_watch_line(garbage);
    for (const auto &event : parsed.events)
      CHECK(event.key.empty());
  }
}

TEST_CASE("contenders are the direct children of the lock's prefix, by create revision") {
  Json range = Json::parse(R"({"kvs":[
      {"key":")" + base64_encode("dlock/a/2") +
                           R"(","create_revision":"9","lease":"2","value":")" + base64_encode("{}") + R"("},
      {"key":")" + base64_encode("dlock/a/1") +
                           R"(","create_revision":"5","lease":"1"},
      {"key":")" + base64_encode("dlock/a/b/3") +
                           R"(","create_revision":"1"},
      {"key":5}, 7, "x"]})");
  auto contenders = contenders_in(range, "dlock/a/");
  REQUIRE(contenders.size() == 2);
  CHECK(contenders[0].key == "dlock/a/1");
  CHECK(contenders[0].lease == 1);
  CHECK(contenders[1].value == "{}");
  CHECK(contenders_in(Json::parse(R"({"kvs":"nope"})"), "dlock/a/").empty());
}

TEST_CASE("contenders include RWMutex readers and writers, and nothing deeper") {
  auto kv = [](const std::string &key, int revision) {
    return R"({"key":")" + base64_encode(key) + R"(","create_revision":")" + std::to_string(revision) + R"("})";
  };
  Json range = Json::parse(R"({"kvs":[)" + kv("dlock/a/read/7", 4) + "," + kv("dlock/a/write/1700000000", 3) + "," +
                           kv("dlock/a/5", 6) + "," + kv("dlock/a/read/", 1) + "," + kv("dlock/a/read/x/y", 2) + "," +
                           kv("dlock/a/write/b/c", 2) + "]}");
  auto contenders = contenders_in(range, "dlock/a/");
  REQUIRE(contenders.size() == 3);
  CHECK(contenders[0].key == "dlock/a/write/1700000000");
  CHECK_FALSE(contenders[0].reader);
  CHECK(contenders[1].key == "dlock/a/read/7");
  CHECK(contenders[1].reader);
  CHECK(contenders[2].key == "dlock/a/5");
  CHECK_FALSE(contenders[2].reader);
}

TEST_CASE("etcd release tokens are lease IDs in lower-case hex") {
  CHECK(lease_from_token("694d7b0f3a8c1e2") == 0x694d7b0f3a8c1e2);
  CHECK(lease_from_token(lease_hex(-1)) == -1);
  for (const char *bad : {"", "694D", "0x12", "12345678901234567", "-1", " 1"})
    CHECK_FALSE(lease_from_token(bad));
}
