// Redis replies through dlock's own handling: the incremental parser fed
// in pieces of every size, then what the backends read from replies
// (error codes, holder hashes, fences; INFO is the doctor target's, the
// status script's reply redis_status's). A protocol error is dlock::Error, nothing else.
#include "backend/redis/common.hpp"
#include "core/error.hpp"
#include "resp_input.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace dlock::backend::redis;

namespace {

void inspect(const Reply &reply, int depth) {
  if (depth > 8) return;
  (void)reply.error_code();
  try {
    (void)check_reply(reply, "redis at fuzz");
  } catch (const dlock::Error &) {
  }
  if (reply.type == Reply::Type::string || reply.type == Reply::Type::status) {
    (void)to_integer(reply.str);
  }
  if (reply.type == Reply::Type::array) {
    (void)holder_from(reply);
    (void)fence_from(reply);
    for (const auto &element : reply.elements)
      inspect(element, depth + 1);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  fuzz::for_each_reply(data, size, [](const Reply &reply) { inspect(reply, 0); });
  return 0;
}
