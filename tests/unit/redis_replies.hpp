#pragma once
// Redis replies made by hand, for unit tests of the code that reads them.
#include "backend/redis/resp.hpp"

#include <string>
#include <utility>
#include <vector>

namespace redis_replies {

using dlock::backend::redis::Reply;

inline Reply integer(long long value) {
  Reply reply;
  reply.type = Reply::Type::integer;
  reply.integer = value;
  return reply;
}

inline Reply text(std::string value) {
  Reply reply;
  reply.type = Reply::Type::string;
  reply.str = std::move(value);
  return reply;
}

inline Reply array(std::vector<Reply> elements) {
  Reply reply;
  reply.type = Reply::Type::array;
  reply.elements = std::move(elements);
  return reply;
}

} // namespace redis_replies
