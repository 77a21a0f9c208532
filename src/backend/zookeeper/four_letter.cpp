#include "backend/zookeeper/four_letter.hpp"

#include "core/error.hpp"
#include "net/stream.hpp"

#include <fmt/format.h>

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

} // namespace dlock::backend::zookeeper
