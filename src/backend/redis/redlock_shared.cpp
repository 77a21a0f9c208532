#include "backend/redis/redlock_shared.hpp"

#include "backend/redis/queue.hpp"
#include "backend/redis/resp.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

#include <algorithm>
#include <cerrno>
#include <functional>
#include <map>
#include <poll.h>

namespace dlock::backend::redis {

std::string format_command(const std::vector<std::string> &command) {
  std::string bytes;
  append_command(bytes, command);
  return bytes;
}

long long integer_at(const NodeAnswer &answer, std::size_t index) {
  if (!answer.answered() || answer.replies.empty()) return -1;
  const Reply &reply = answer.replies.front();
  if (reply.type == Reply::Type::integer && index == 0) return reply.integer;
  if (reply.type != Reply::Type::array || reply.elements.size() <= index) return -1;
  const Reply &element = reply.elements[index];
  if (element.type == Reply::Type::integer) return element.integer;
  return to_integer(element.str).value_or(-1);
}

std::vector<std::string> redlock_command(const std::string &script, const Keys &keys,
                                         std::initializer_list<std::string> args) {
  return semaphore_command(script, keys, args);
}

std::size_t add_majority_readers(LockStatus &status, const std::vector<NodeAnswer> &answers, std::size_t majority) {
  // Per reader (the SHA-1 of its token): its entries {pttl, fields} on the
  // nodes that list it.
  std::map<std::string, std::vector<const Reply *>> by_member;
  for (const auto &answer : answers) {
    if (!answer.answered()) continue;
    const Reply &reply = answer.replies.front();
    if (reply.type != Reply::Type::array || reply.elements.size() < 5 || reply.elements[4].type != Reply::Type::array)
      continue;
    for (const Reply &entry : reply.elements[4].elements)
      if (entry.type == Reply::Type::array && entry.elements.size() == 3 &&
          entry.elements[2].type == Reply::Type::array && !entry.elements[0].str.empty())
        by_member[entry.elements[0].str].push_back(&entry);
  }
  std::size_t most = 0;
  std::vector<HolderStatus> readers;
  for (const auto &[member, entries] : by_member) {
    most = std::max(most, entries.size());
    if (entries.size() < majority) continue;
    HolderStatus reader;
    std::vector<long long> left;
    for (const Reply *entry : entries) {
      left.push_back(to_integer(entry->elements[1].str).value_or(-1));
      const Reply &fields = entry->elements[2];
      if (reader.info.host.empty()) reader.info = holder_from(fields);
      if (auto fence = fence_from(fields)) reader.fence = std::max(reader.fence.value_or(0), *fence);
    }
    // It reads until all but a minority of its copies end.
    std::sort(left.begin(), left.end(), std::greater<>());
    if (long long ms = left[majority - 1]; ms >= 0) reader.time_left = Millis(ms);
    readers.push_back(std::move(reader));
  }
  if (status.held || readers.empty()) return most;
  status.held = true;
  status.mode = HoldMode::shared;
  // The name's last fence is no reader's; each reader has its own.
  status.fence.reset();
  status.time_left.reset();
  // Oldest first, as a reader would expect to see them.
  std::sort(readers.begin(), readers.end(),
            [](const HolderStatus &a, const HolderStatus &b) { return a.info.since < b.info.since; });
  status.holders = std::move(readers);
  return most;
}

RedlockListeners::RedlockListeners(const Nodes &nodes, const std::string &channel, Millis per_node) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    auto connection = nodes.connect_to(i);
    try {
      if (subscribe(*connection, channel, SteadyClock::now() + per_node)) {
        m_subscribers.push_back(std::move(connection));
        m_lost.push_back(false);
      }
    } catch (const Error &failure) {
      detail(1, "cannot subscribe at {}: {}", nodes.address(i), failure.what());
    }
  }
}

void RedlockListeners::wait(SteadyClock::time_point wake, const Interrupt &interrupt, std::minstd_rand &random) {
  for (;;) {
    std::vector<pollfd> fds;
    for (std::size_t i = 0; i < m_subscribers.size(); ++i)
      fds.push_back({m_lost[i] ? -1 : m_subscribers[i]->fd(), POLLIN, 0});
    fds.push_back({interrupt.fd(), POLLIN, 0});
    auto left = std::chrono::ceil<Millis>(wake - SteadyClock::now()).count();
    if (left <= 0 || interrupt.requested()) return;
    int ready = poll(fds.data(), fds.size(), static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || fds.back().revents) return;
    bool turn = false;
    for (std::size_t i = 0; i + 1 < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      try {
        // What has arrived, but never past `wake`: a node that streams
        // messages without end must not hold this loop.
        while (SteadyClock::now() < wake) {
          std::optional<Reply> message = m_subscribers[i]->read(SteadyClock::now());
          if (!message) break;
          std::string_view what = message_text(*message);
          if (what == "turn") turn = true;
          if (what == "next") wake = std::min(wake, SteadyClock::now() + k_turn + Millis(100 + random() % 400));
        }
      } catch (const Error &) {
        m_lost[i] = true; // that node went away; the others and the fallback time remain
      }
    }
    if (turn) return;
  }
}

} // namespace dlock::backend::redis
