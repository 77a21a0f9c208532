#include "backend/redis/queue.hpp"

#include "backend/redis/server_scripts.hpp"
#include "core/identity.hpp"

#include <fmt/format.h>

namespace dlock::backend::redis {

AcquireCommand acquire_command(const LockRequest &request, const Keys &keys, const std::string &id,
                               const std::string &token) {
  const HolderInfo &holder = request.holder;
  std::string ttl = std::to_string(request.ttl.count());
  std::string pid = std::to_string(holder.pid);
  AcquireCommand command;
  if (request.mode == HoldMode::shared) {
    command.token = token.empty() ? new_shared_token() : token;
    append_command(command.bytes,
                   semaphore_command(lua::server::shared::acquire, keys,
                                     {command.token, ttl, holder.host, pid, holder.user, holder.command, id}));
  } else if (request.mode == HoldMode::semaphore) {
    command.token = token.empty() ? new_semaphore_token() : token;
    append_command(command.bytes, semaphore_command(lua::server::semaphore::acquire, keys,
                                                    {command.token, ttl, std::to_string(request.limit), holder.host,
                                                     pid, holder.user, holder.command, id}));
  } else {
    command.token = token.empty() ? random_hex(16) : token;
    append_command(command.bytes,
                   semaphore_command(lua::server::acquire, keys,
                                     {command.token, ttl, holder.host, pid, holder.user, holder.command, id}));
  }
  return command;
}

std::string queue_member(const LockRequest &request, const std::string &id) {
  if (request.mode == HoldMode::shared) return "r:" + id;
  if (request.mode == HoldMode::semaphore) return fmt::format("s{}:{}", request.limit, id);
  return "x:" + id;
}

std::string_view message_text(const Reply &message) {
  if (message.type != Reply::Type::array || message.elements.size() != 3) return {};
  return message.elements[2].str;
}

} // namespace dlock::backend::redis
