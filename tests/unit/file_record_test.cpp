#include "backend/file/record.hpp"

#include <catch2/catch.hpp>

#include <string>

using dlock::backend::file::decode_record;
using dlock::backend::file::encode_record;
using dlock::backend::file::LockRecord;

TEST_CASE("a file lock record round-trips, padded or not") {
  LockRecord record;
  record.fence = 18446744073709551614u;
  dlock::HolderInfo holder;
  holder.host = "h";
  holder.pid = 42;
  holder.user = "u";
  holder.command = "c";
  record.holder = holder;
  record.ttl_ms = 2000;
  record.renewed_ms = 5;
  std::string text = encode_record(record);
  auto decoded = decode_record(text);
  REQUIRE(decoded);
  CHECK(decoded->fence == record.fence);
  REQUIRE(decoded->holder);
  CHECK(decoded->holder->pid == 42);
  CHECK(decoded->ttl_ms == 2000);
  text.insert(text.size() - 1, 40, ' ');
  CHECK(decode_record(text));
}

TEST_CASE("an empty lock file is a new one, with fence 0") {
  for (const char *text : {"", "\n", "   \n"}) {
    auto decoded = decode_record(text);
    REQUIRE(decoded);
    CHECK(decoded->fence == 0);
    CHECK_FALSE(decoded->holder);
  }
}

TEST_CASE("a lock record that is not dlock's is refused, never read as fence 0") {
  for (const char *text : {"garbage", "{}", "[]", "{\"fence\":-1}", "{\"fence\":18446744073709551616}",
                           "{\"fence\":1.5}", "{\"fence\":1e3}", "{\"fence\":\"7\"}", "{\"fence\":7} trailing",
                           "{\"fence\":7}{\"fence\":8}", "{\"fence\":7,\"pid\":\"x\"}",
                           "{\"fence\":7,\"pid\":1,\"host\":3}", "{\"fence\":7,\"pid\":1,\"ttl_ms\":\"1\"}"})
    CHECK_FALSE(decode_record(text));
  CHECK_FALSE(decode_record(std::string("{\"fence\":7}\n\0\0", 14)));
  CHECK(decode_record("{\"fence\":18446744073709551615}")->fence == 18446744073709551615u);
}
