#include "core/log.hpp"

#include <atomic>
#include <cerrno>
#include <string>
#include <unistd.h>

namespace dlock {

namespace {
std::atomic<int> g_verbosity{0};
}

void set_verbosity(int level) { g_verbosity.store(level); }
int verbosity() { return g_verbosity.load(); }

void write_line(std::string_view line) {
  std::string text = "dlock: ";
  text += line;
  text += '\n';
  std::size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    written += static_cast<std::size_t>(n);
  }
}

} // namespace dlock
