// The Redis status script's reply, {pttl, holder fields, last fence, N or
// '', {semaphore holders}, {readers}}, as the backend reads it
// (status_from, then add_semaphore_status and add_shared_status) and each
// part alone, then as dlock shows it. A garbled reply is dlock::Error;
// a status read without one has holders only in the shared modes, each
// slot and N in range.
#include "backend/redis/common.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"
#include "resp_input.hpp"
#include "runner/runner.hpp"

#include <cstdint>
#include <cstdlib>

using namespace dlock::backend;
using namespace dlock::backend::redis;

namespace {

void check(const LockStatus &status) {
  if (status.mode == HoldMode::exclusive && !status.holders.empty()) std::abort();
  if (status.mode != HoldMode::exclusive && (!status.held || status.holders.empty() || status.holder)) std::abort();
  if (status.limit && (*status.limit < 1 || *status.limit > max_limit)) std::abort();
  for (const auto &holder : status.holders)
    if (holder.slot && *holder.slot >= max_limit) std::abort();
  if (dlock::runner::holders_summary(status).empty() != status.holders.empty()) std::abort();
  (void)dlock::cli::status_text(status);
}

// Reads the reply into `status` with `parts` in turn, as the backend
// does, and checks what comes out; a garbled reply is dlock::Error.
template <typename... Parts> void read_as(LockStatus status, Parts... parts) {
  try {
    (parts(status), ...);
    check(status);
  } catch (const dlock::Error &) {
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  fuzz::for_each_reply(data, size, [](const Reply &reply) {
    Keys keys = keys_for("dlock", "job");
    auto semaphore = [&](LockStatus &status) { add_semaphore_status(status, reply, keys); };
    auto shared = [&](LockStatus &status) { add_shared_status(status, reply, keys); };
    try {
      read_as(status_from("job", reply, keys), semaphore, shared);
    } catch (const dlock::Error &) {
    }
    // Each part alone, also on replies status_from() refuses or finds held.
    LockStatus unread;
    unread.name = "job";
    read_as(unread, semaphore);
    read_as(unread, shared);
  });
  return 0;
}
