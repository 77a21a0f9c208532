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

TEST_CASE("a record of readers or a semaphore's holders round-trips with fences, slots and the limit") {
  LockRecord record;
  record.fence = 9;
  dlock::HolderInfo holder;
  holder.host = "h";
  holder.pid = 42;
  holder.command = "c";
  record.readers.push_back({holder, 8, std::nullopt});
  holder.pid = 43;
  record.readers.push_back({holder, 9, 2u});
  record.limit = 3;
  auto decoded = decode_record(encode_record(record));
  REQUIRE(decoded);
  CHECK_FALSE(decoded->holder);
  CHECK(decoded->limit == 3);
  REQUIRE(decoded->readers.size() == 2);
  CHECK(decoded->readers[0].holder.pid == 42);
  CHECK(decoded->readers[0].fence == 8);
  CHECK_FALSE(decoded->readers[0].slot);
  CHECK(decoded->readers[1].fence == 9);
  CHECK(decoded->readers[1].slot == 2u);
}

TEST_CASE("readers, slots and limits of the wrong shape make a record that is not dlock's") {
  for (const char *text :
       {"{\"fence\":7,\"readers\":{}}", "{\"fence\":7,\"readers\":[1]}", "{\"fence\":7,\"readers\":[{\"pid\":1}]}",
        "{\"fence\":7,\"readers\":[{\"fence\":-1,\"pid\":1}]}", "{\"fence\":7,\"readers\":[{\"fence\":1}]}",
        "{\"fence\":7,\"readers\":[{\"fence\":1,\"pid\":1,\"slot\":-1}]}",
        "{\"fence\":7,\"readers\":[{\"fence\":1,\"pid\":1,\"slot\":1000}]}",
        "{\"fence\":7,\"readers\":[{\"fence\":1,\"pid\":\"1\"}]}", "{\"fence\":7,\"limit\":1001}",
        "{\"fence\":7,\"limit\":\"3\"}", "{\"fence\":7,\"limit\":-3}"})
    CHECK_FALSE(decode_record(text));
  std::string many = "{\"fence\":7,\"readers\":[";
  for (std::size_t i = 0; i <= dlock::backend::file::max_recorded_readers; ++i)
    many += std::string(i ? "," : "") + "{\"fence\":1,\"pid\":1}";
  CHECK_FALSE(decode_record(many + "]}"));
}
