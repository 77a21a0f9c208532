// ZooKeeper's answer to the "srvr" four-letter word (ping), as read from
// the server's client port until it closes.
#include "backend/zookeeper/four_letter.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  dlock::backend::zookeeper::SrvrAnswer answer = dlock::backend::zookeeper::read_srvr(text);
  if (answer.version.size() > 2 * text.size() + 64) std::abort();
  std::string mode = dlock::backend::zookeeper::line_value(text, "Mode:");
  if (mode.find('\n') != std::string::npos) std::abort();
  return 0;
}
