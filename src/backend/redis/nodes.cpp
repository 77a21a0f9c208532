#include "backend/redis/nodes.hpp"

#include "backend/redis/common.hpp"
#include "core/error.hpp"

#include <poll.h>
#include <thread>

namespace dlock::backend::redis {

std::vector<NodeAnswer> Nodes::exchange(const std::vector<std::string> &requests, std::size_t replies_each,
                                        Deadline deadline, const Enough &enough, Millis linger) {
  std::vector<NodeAnswer> answers(size());
  auto fail = [&](std::size_t i, const std::exception &failure) {
    answers[i].done = true;
    answers[i].at = Clock::now();
    answers[i].error = failure.what();
    if (auto *error = dynamic_cast<const Error *>(&failure)) {
      answers[i].code = error->code();
      answers[i].refused = error->answered();
    }
    m_connections[i]->close();
  };
  connect_all(requests, deadline, answers);
  std::vector<std::size_t> pending;
  std::vector<std::vector<Reply>> replies(size());
  for (std::size_t i = 0; i < size(); ++i) {
    if (requests[i].empty()) {
      answers[i].done = true;
      answers[i].error = "not asked";
      continue;
    }
    if (answers[i].done) continue; // could not connect
    try {
      m_connections[i]->send(requests[i], deadline);
      pending.push_back(i);
    } catch (const std::exception &failure) {
      fail(i, failure);
    }
  }
  std::vector<pollfd> fds;
  auto started = Clock::now();
  bool lingering = false;
  while (!pending.empty()) {
    if (!lingering && enough && enough(answers)) {
      if (linger.count() <= 0) break;
      // The rest get a little longer: a node just behind the others is
      // waited for (its reply keeps our requests in order), a stalled one
      // costs only this.
      lingering = true;
      deadline = std::min(deadline, Clock::now() + std::max<Clock::duration>(linger, 2 * (Clock::now() - started)));
    }
    auto left = std::chrono::ceil<Millis>(deadline - Clock::now()).count();
    if (left <= 0) break;
    fds.clear();
    for (std::size_t i : pending)
      fds.push_back({m_connections[i]->fd(), POLLIN, 0});
    int ready = poll(fds.data(), fds.size(), static_cast<int>(left));
    if (ready < 0 && errno != EINTR) break;
    std::vector<std::size_t> still;
    for (std::size_t k = 0; k < pending.size(); ++k) {
      std::size_t i = pending[k];
      if (ready <= 0 || !fds[k].revents) {
        still.push_back(i);
        continue;
      }
      try {
        // Only what has arrived: the deadline is already due for read().
        while (replies[i].size() < replies_each)
          if (std::optional<Reply> reply = m_connections[i]->read(Clock::now()))
            replies[i].push_back(std::move(*reply));
          else
            break;
        if (replies[i].size() < replies_each) {
          still.push_back(i);
          continue;
        }
        answers[i].done = true;
        answers[i].at = Clock::now();
        // An error reply (no password, a replica, ...) makes the node
        // unusable for this request.
        for (Reply &reply : replies[i])
          reply = check_reply(std::move(reply), m_connections[i]->where());
        answers[i].replies = std::move(replies[i]);
      } catch (const std::exception &failure) {
        fail(i, failure);
      }
    }
    pending = std::move(still);
  }
  for (std::size_t i : pending) {
    m_connections[i]->close();
    answers[i].done = false;
    answers[i].error = "no answer in time";
  }
  return answers;
}

void Nodes::connect_all(const std::vector<std::string> &requests, Deadline deadline, std::vector<NodeAnswer> &answers) {
  std::vector<std::size_t> needed;
  for (std::size_t i = 0; i < size(); ++i)
    if (!requests[i].empty() && (m_connections[i]->drop_if_closed() || !m_connections[i]->is_open()))
      needed.push_back(i);
  auto connect_one = [&](std::size_t i) {
    try {
      m_connections[i]->ensure_connected(deadline);
    } catch (const Error &failure) {
      answers[i].error = failure.what();
      answers[i].code = failure.code();
      answers[i].done = true;
      answers[i].at = Clock::now();
    }
  };
  if (needed.size() == 1) {
    connect_one(needed.front());
    return;
  }
  std::vector<std::thread> threads;
  for (std::size_t i : needed)
    threads.emplace_back(connect_one, i); // each touches only its own node and answer
  for (auto &thread : threads)
    thread.join();
}

} // namespace dlock::backend::redis
