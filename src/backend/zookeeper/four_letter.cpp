#include "backend/zookeeper/four_letter.hpp"

#include "core/error.hpp"
#include "core/unique_fd.hpp"
#include "net/stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <utility>

namespace dlock::backend::zookeeper {

std::string four_letter_word(const net::Address &address, const char *word, net::Deadline deadline,
                             const std::string &where, Millis timeout) {
  net::Stream stream;
  stream.connect(address, net::TlsOptions{}, deadline, where, timeout);
  net::Io io = stream.write_all(word, deadline);
  if (io == net::Io::data) {
    // The server answers and closes: everything until the close, at most
    // 64 KiB (a "mntr" answer is about 1 KiB), by the deadline.
    std::string answer;
    io = stream.read_bounded(65536, deadline, -1, [&answer](const char *bytes, std::size_t size) {
      answer.append(bytes, size);
      return false;
    });
    if (io == net::Io::closed) return answer;
  }
  if (io == net::Io::timeout)
    throw UnavailableError(fmt::format("{}: no answer within {}", where, format_duration(timeout)));
  throw UnavailableError(fmt::format("{}: {}", where, stream.error()));
}

std::string ClosingProbe::watch(net::Deadline until) {
  if (!m_closing.empty()) return m_closing;
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    // At most four to each server: a server that does not close them
    // counts them against its limit until the probe ends.
    if (now >= m_next_round && m_probes.size() < 4 * std::min<std::size_t>(m_servers.size(), 3)) {
      m_next_round = now + Millis(250);
      for (std::size_t i = 0; i < m_servers.size() && i < 3; ++i) {
        std::string where = m_servers[i].display();
        try {
          m_probes.push_back(net::connect_tcp(m_servers[i], std::max(until, now + Millis(100)), where, Millis(250)));
          m_names.push_back(where);
          m_items.push_back({m_probes.back().get(), POLLIN, 0});
        } catch (const Error &) {
          // not reached: not this kind of refusal
        }
      }
    }
    if (m_probes.empty()) return {};
    auto wait_until = std::min(until, m_next_round);
    if (poll(m_items.data(), m_items.size(), now >= until ? 0 : net::millis_until(wait_until)) > 0) {
      for (std::size_t i = 0; i < m_items.size(); ++i) {
        if (!m_items[i].revents) continue;
        char byte = 0;
        ssize_t got = recv(m_items[i].fd, &byte, 1, MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return m_closing = m_names[i];
        m_items[i].fd = -1; // it spoke: not what a refusal at accept does
      }
    }
    if (std::chrono::steady_clock::now() >= until) return {};
  }
}

std::string line_value(const std::string &text, std::string_view key) {
  auto at = text.find(key);
  if (at == std::string::npos) return {};
  auto start = at + key.size();
  auto end = text.find('\n', start);
  std::string value = text.substr(start, end == std::string::npos ? end : end - start);
  while (!value.empty() && (value.front() == ' '))
    value.erase(0, 1);
  while (!value.empty() && (value.back() == '\r' || value.back() == ' '))
    value.pop_back();
  return value;
}

SrvrAnswer read_srvr(const std::string &answer) {
  SrvrAnswer out;
  std::string version = line_value(answer, "Zookeeper version:");
  version = version.substr(0, std::min(version.find(','), version.find("-${"))); // Debian: "3.8.0-${mvngit.commit.id}"
  std::string mode = line_value(answer, "Mode:");
  if (answer.find("not in the whitelist") != std::string::npos) {
    out.version = "unknown (srvr is not in 4lw.commands.whitelist)";
  } else if (answer.find("not currently serving requests") != std::string::npos) {
    out.error = "not serving requests (no quorum?)";
  } else if (answer.find("Zookeeper version:") == std::string::npos || answer.find("Mode:") == std::string::npos) {
    // Every srvr answer names the version and the mode: anything else
    // (nothing, garbage, a cut-off answer, another word's answer) is not
    // a ZooKeeper server that dlock can count on.
    out.error = "not an answer to srvr: not a ZooKeeper server dlock can talk to";
  } else {
    out.version = mode.empty() ? version : fmt::format("{} ({})", version, mode);
    if (mode == "read-only") out.error = "read-only: cannot serve locks";
  }
  return out;
}

PingResult ping_servers(const std::vector<net::Address> &addresses, Millis timeout) {
  PingResult result;
  result.nodes.resize(addresses.size());
  auto ask = [timeout](const net::Address &address, NodeHealth &health) {
    health.address = address.display();
    std::string where = fmt::format("ZooKeeper at {}", health.address);
    auto started = std::chrono::steady_clock::now();
    try {
      std::string answer = four_letter_word(address, "srvr", started + timeout, where, timeout);
      health.round_trip =
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
      health.reachable = true;
      SrvrAnswer srvr = read_srvr(answer);
      health.version = std::move(srvr.version);
      health.error = std::move(srvr.error);
    } catch (const Error &failure) {
      health.error = failure.what();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < addresses.size(); ++i)
    threads.emplace_back(ask, std::cref(addresses[i]), std::ref(result.nodes[i]));
  ask(addresses[0], result.nodes[0]);
  for (auto &thread : threads)
    thread.join();
  // An ensemble serves while a majority does (of the servers the URL
  // names: it may list only some of them).
  if (result.nodes.size() > 1) {
    auto serving = std::count_if(result.nodes.begin(), result.nodes.end(),
                                 [](const NodeHealth &node) { return node.reachable && node.error.empty(); });
    result.quorum = static_cast<std::size_t>(serving) * 2 > result.nodes.size();
  }
  return result;
}

} // namespace dlock::backend::zookeeper
