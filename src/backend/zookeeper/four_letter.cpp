#include "backend/zookeeper/four_letter.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dlock::backend::zookeeper {

std::string four_letter_word(const net::Address &address, const char *word, net::Deadline deadline,
                             const std::string &where, Millis timeout) {
  UniqueFd fd = net::connect_tcp(address, deadline, where, timeout);
  std::string request = word;
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    throw UnavailableError(errno_message(fmt::format("cannot send to {}", where), errno));
  std::string answer;
  char buffer[4096];
  for (;;) {
    pollfd item{fd.get(), POLLIN, 0};
    int ready = ::poll(&item, 1, net::millis_until(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) throw UnavailableError(fmt::format("{}: no answer within {}", where, format_duration(timeout)));
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
    if (answer.size() > 65536) break;
  }
  return answer;
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
  } else {
    out.version = mode.empty() ? version : fmt::format("{} ({})", version, mode);
    if (mode == "read-only") out.error = "read-only: cannot serve locks";
  }
  return out;
}

} // namespace dlock::backend::zookeeper
