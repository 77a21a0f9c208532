#include "backend/zookeeper/four_letter.hpp"

#include "core/error.hpp"
#include "core/stream.hpp"

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
  if (io == net::Io::timeout) throw UnavailableError(fmt::format("{}: no answer within {}", where, format_duration(timeout)));
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

} // namespace dlock::backend::zookeeper
