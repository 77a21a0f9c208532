// Redis replies through dlock's own handling: the incremental parser fed
// in pieces of every size, then what the backends read from replies
// (error codes, holder hashes, fences, INFO fields, the status script's
// reply with a semaphore's holders). A protocol error is dlock::Error,
// nothing else.
#include "backend/redis/common.hpp"
#include "backend/redis/resp.hpp"
#include "core/error.hpp"

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
    (void)info_field(reply.str, "redis_version");
    (void)server_info(reply.str);
  }
  if (reply.type == Reply::Type::array) {
    (void)holder_from(reply);
    (void)fence_from(reply);
    Keys keys = keys_for("dlock", "job");
    try {
      // As the backend reads the status script's reply on all five keys:
      // the lock's part, then the semaphore's.
      dlock::backend::LockStatus status = status_from("job", reply, keys);
      add_semaphore_status(status, reply, keys);
    } catch (const dlock::Error &) {
    }
    try {
      // The semaphore's part alone, also for replies status_from() refuses
      // or finds held.
      dlock::backend::LockStatus status;
      status.name = "job";
      add_semaphore_status(status, reply, keys);
    } catch (const dlock::Error &) {
    }
    for (const auto &element : reply.elements)
      inspect(element, depth + 1);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte sets the size of the pieces the bytes arrive in.
  std::size_t piece = data[0] % 16 + 1;
  const char *bytes = reinterpret_cast<const char *>(data + 1);
  std::size_t left = size - 1;
  ReplyParser parser;
  try {
    for (std::size_t at = 0; at < left; at += piece) {
      parser.feed(bytes + at, std::min(piece, left - at));
      while (auto reply = parser.next())
        inspect(*reply, 0);
    }
  } catch (const dlock::Error &) {
  }
  return 0;
}
