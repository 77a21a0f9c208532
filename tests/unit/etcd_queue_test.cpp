#include "backend/etcd/queue.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>

using namespace dlock::backend;
using namespace dlock::backend::etcd;

namespace {

Json kv(const std::string &key, std::int64_t create_revision) {
  return {{"key", base64_encode(key)}, {"create_revision", std::to_string(create_revision)}, {"lease", "7"}};
}

// The answer to wake_reads(): our key, the key before it, and for a
// semaphore the keys of the slots created before ours (up to N + 1).
Json answer(const Json &own, const Json &before, std::optional<std::int64_t> slots = std::nullopt) {
  Json out = {{"header", {{"revision", "40"}}},
              {"responses", {{{"response_range", {{"kvs", own}}}}, {{"response_range", {{"kvs", before}}}}}}};
  if (slots) {
    Json kvs = Json::array();
    for (std::int64_t i = 0; i < *slots; ++i)
      kvs.push_back(kv("ns/a/sem/" + std::to_string(i), 10 + i));
    out["responses"].push_back({{"response_range", {{"kvs", kvs}, {"count", "9"}}}}); // etcd's count: the whole range's
  }
  return out;
}

const std::string k_mine = "ns/a/2b", k_slot = "ns/a/sem/2b";

} // namespace

TEST_CASE("a waiter woken by its watch reads two keys, not the queue: its own and the last one created before it") {
  Json reads = wake_reads("ns/a/", k_mine, 25, 0)["success"];
  REQUIRE(reads.size() == 2);
  CHECK(reads[0]["request_range"]["key"] == base64_encode(k_mine));
  CHECK_FALSE(reads[0]["request_range"].contains("range_end"));
  Json before = reads[1]["request_range"];
  CHECK(before["key"] == base64_encode("ns/a/"));
  CHECK(before["range_end"] == base64_encode("ns/a0"));
  CHECK(before["max_create_revision"] == "24");
  CHECK(before["sort_target"] == "CREATE");
  CHECK(before["sort_order"] == "DESCEND");
  CHECK(before["limit"] == "1");
  CHECK(before["keys_only"] == true);
  SECTION("a semaphore's waiter of N also reads up to N + 1 keys of the slots before its own (etcd's count is the "
          "whole range's)") {
    Json slot_reads = wake_reads("ns/a/sem/", k_slot, 25, 3)["success"];
    REQUIRE(slot_reads.size() == 3);
    CHECK(slot_reads[2]["request_range"]["limit"] == "4");
    CHECK(slot_reads[2]["request_range"]["max_create_revision"] == "24");
    CHECK(slot_reads[2]["request_range"]["keys_only"] == true);
    CHECK_FALSE(slot_reads[2]["request_range"].contains("count_only"));
  }
}

TEST_CASE("an exclusive waiter stands by its own key and the key before it") {
  auto stand = [](const Json &own, const Json &before) {
    return standing_on_wake(answer(own, before), "ns/a/", k_mine, HoldMode::exclusive, 1);
  };
  auto behind = stand(Json::array({kv(k_mine, 25)}), Json::array({kv("ns/a/1c", 19)}));
  REQUIRE(behind);
  CHECK(behind->kind == Standing::Kind::waiting);
  REQUIRE(behind->ahead);
  CHECK(behind->ahead->key == "ns/a/1c");
  auto first = stand(Json::array({kv(k_mine, 25)}), Json::array());
  REQUIRE(first);
  CHECK(first->kind == Standing::Kind::ours);
  CHECK(first->create_revision == 25);
  // Our key deleted by hand, or its lease ran out: start over, whoever is ahead.
  CHECK(stand(Json::array(), Json::array())->kind == Standing::Kind::gone);
  CHECK(stand(Json::array(), Json::array({kv("ns/a/1c", 19)}))->kind == Standing::Kind::gone);
  // A key of lock "a/b" lies under our prefix but is not our contender: the
  // answer proves nothing, and the whole listing must decide.
  CHECK_FALSE(stand(Json::array({kv(k_mine, 25)}), Json::array({kv("ns/a/b/9", 24)})));
}

TEST_CASE("a semaphore waiter holds a slot when fewer than N slots were taken before its own") {
  auto stand = [](const Json &own, const Json &before, std::int64_t count) {
    return standing_on_wake(answer(own, before, count), "ns/a/sem/", k_slot, HoldMode::semaphore, 3);
  };
  const Json mine = Json::array({kv(k_slot, 25)}), before = Json::array({kv("ns/a/sem/1c", 19)});
  CHECK(stand(mine, Json::array(), 0)->kind == Standing::Kind::ours);
  CHECK(stand(mine, before, 2)->kind == Standing::Kind::ours);
  auto first_waiter = stand(mine, before, 3);
  CHECK(first_waiter->kind == Standing::Kind::waiting);
  CHECK(first_waiter->watch_holders);
  auto later = stand(mine, before, 4);
  CHECK(later->kind == Standing::Kind::waiting);
  CHECK_FALSE(later->watch_holders);
  REQUIRE(later->ahead);
  CHECK(later->ahead->key == "ns/a/sem/1c");
  CHECK(stand(Json::array(), before, 1)->kind == Standing::Kind::gone);
  CHECK_FALSE(stand(mine, Json::array(), 2)); // a count without a last key
}
