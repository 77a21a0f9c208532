#pragma once
// Redis replies made by hand, for unit tests of the code that reads them.
#include "backend/redis/common.hpp"
#include "backend/redis/resp.hpp"

#include <optional>
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

// An array of strings, as HGETALL and HMGET answer.
inline Reply texts(const std::vector<std::string> &values) {
  std::vector<Reply> elements;
  for (const std::string &value : values) {
    elements.push_back(text(value));
  }
  return array(std::move(elements));
}

// A holder's info hash as the status scripts return it: host h1, user u,
// command job, since 1796292313647, with PID and FENCE; a semaphore's
// holders have a SLOT field too (an empty one when the slot is unknown).
inline Reply holder_fields(const std::string &pid, const std::string &fence,
                           const std::optional<std::string> &slot = std::nullopt) {
  std::vector<std::string> fields = {"host", "h1",    "pid",           pid,     "user", "u", "command",
                                     "job",  "since", "1796292313647", "fence", fence};
  if (slot) {
    fields.insert(fields.end(), {"slot", *slot});
  }
  return texts(fields);
}

// NAME's status (namespace dlock) read from the status script's REPLY as
// the Redis backend reads it: an exclusive holder, else a semaphore's
// slots, else a shared lock's readers.
inline dlock::backend::LockStatus status_of(const std::string &name, const Reply &reply) {
  using namespace dlock::backend::redis;
  Keys keys = keys_for("dlock", name);
  dlock::backend::LockStatus status = status_from(name, reply, keys);
  add_semaphore_status(status, reply, keys);
  add_shared_status(status, reply, keys);
  return status;
}

} // namespace redis_replies
