#pragma once
// The Redis replies in a fuzz input, as dlock's incremental parser gets
// them from a socket: the first byte sets the size of the pieces (1-16
// bytes) the rest arrives in. Shared by the targets that read replies.
#include "backend/redis/resp.hpp"
#include "core/error.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace fuzz {

// Calls `each` with every complete reply; a protocol error (dlock::Error)
// ends the input, as it ends the backend's connection.
template <typename Each> void for_each_reply(const std::uint8_t *data, std::size_t size, Each each) {
  if (size == 0) return;
  std::size_t piece = data[0] % 16 + 1;
  const char *bytes = reinterpret_cast<const char *>(data + 1);
  std::size_t left = size - 1;
  dlock::backend::redis::ReplyParser parser;
  try {
    for (std::size_t at = 0; at < left; at += piece) {
      parser.feed(bytes + at, std::min(piece, left - at));
      while (auto reply = parser.next())
        each(*reply);
    }
  } catch (const dlock::Error &) {
  }
}

} // namespace fuzz
