// Lines of /proc/locks (the file backend's status and list).
#include "backend/file/proc_locks.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    (void)dlock::backend::file::parse_proc_locks_line(text.substr(start, end - start));
    start = end + 1;
  }
  return 0;
}
