#include "backend/postgres/pg_backend.hpp"
#include "core/sha256.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace {

std::string hex(const std::array<std::uint8_t, 32> &digest) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (auto byte : digest) {
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

} // namespace

TEST_CASE("sha256 matches the FIPS 180-4 examples and the block boundaries", "[sha256]") {
  CHECK(hex(dlock::sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex(dlock::sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits in the first padding block.
  CHECK(hex(dlock::sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex(dlock::sha256(std::string(1'000'000, 'a'))) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55 and 64 bytes: the last lengths of one and two padding blocks.
  CHECK(hex(dlock::sha256(std::string(55, 'a'))) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(hex(dlock::sha256(std::string(64, 'a'))) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST_CASE("the PostgreSQL advisory key is the documented one", "[postgres]") {
  // The man page's example, as psql computes it with the documented SQL.
  CHECK(dlock::backend::postgres::advisory_key("dlock nightly-report") == -1378178437559386791LL);
  // A positive key too: the first byte of sha256("dlock a") decides the sign.
  auto key = dlock::backend::postgres::advisory_key("dlock a");
  auto digest = dlock::sha256("dlock a");
  CHECK((key < 0) == (digest[0] >= 0x80));
}
