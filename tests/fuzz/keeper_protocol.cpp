// The acquire keeper's protocol: requests as the keeper reads them (any
// local process can connect), replies as `dlock renew` and `release` read
// them, and keeper release tokens. What parses formats back to the same.
#include "runner/keeper_protocol.hpp"
#include "runner/keeper.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace dlock::runner;

namespace {

// The line without the newline that ends it, as the reading end passes it on.
std::string line_of(std::string formatted) {
  if (!formatted.empty() && formatted.back() == '\n') formatted.pop_back();
  return formatted;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  if (auto request = parse_request(text)) {
    auto again = parse_request(line_of(format_request(*request)));
    if (!again || again->operation != request->operation || !(again->lock == request->lock) ||
        again->token != request->token || again->ttl != request->ttl)
      std::abort();
  }
  if (auto reply = parse_reply(text)) {
    auto again = parse_reply(line_of(format_reply(*reply)));
    if (!again || again->answer != reply->answer || again->fence != reply->fence || again->ttl != reply->ttl ||
        again->window != reply->window || again->code != reply->code || again->message != reply->message ||
        again->confirmed_at != reply->confirmed_at)
      std::abort();
  }
  (void)is_keeper_token(std::string(text));
  // Both ends also format what came from outside: a token from the
  // command line (at most 256 bytes: resolve_token), a lock name (at most
  // 200: validate_name), a backend's error message (any length).
  KeeperRequest request;
  request.token = std::string(text.substr(0, 256));
  request.lock.name = std::string(text.substr(0, 200));
  if (auto again = parse_request(line_of(format_request(request))); !again) std::abort();
  KeeperReply reply;
  reply.answer = KeeperAnswer::error;
  reply.code = 69;
  reply.message = std::string(text);
  if (auto again = parse_reply(line_of(format_reply(reply))); !again) std::abort();
  return 0;
}
