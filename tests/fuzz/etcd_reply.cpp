// What etcd's JSON gateway answers: error bodies, range answers (the
// contenders of a lock), lease answers, watch stream lines, base64 bytes
// and lease-ID release tokens. None of it may throw or overflow.
#include "backend/etcd/reply.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace dlock::backend::etcd;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  if (base64_decode(base64_encode(text)) != text) std::abort();
  (void)base64_decode(text);
  if (auto lease = lease_from_token(text); lease && lease_from_token(lease_hex(*lease)) != lease) std::abort();
  (void)parse_watch_line(text);
  Json doc = Json::parse(text, nullptr, false);
  (void)refusal_in(doc, 503);
  for (const auto &contender : contenders_in(doc, "dlock/job/"))
    if (contender.key.rfind("dlock/job/", 0) != 0) std::abort();
  for (const Json *object : {static_cast<const Json *>(&doc), &object_in(doc, "header"), &object_in(doc, "result")}) {
    for (const char *field : {"TTL", "ID", "revision", "member_id", "leader", "version", "token", "kvs"}) {
      (void)number_in(*object, field);
      (void)unsigned_in(*object, field);
      (void)seconds_in(*object, field);
      (void)string_in(*object, field);
      (void)array_in(*object, field);
    }
  }
  for (const auto &response : array_in(doc, "responses"))
    (void)contenders_in(object_in(response, "response_range"), "dlock/job/");
  return 0;
}
