#pragma once

#include <fmt/format.h>

#include <string_view>

namespace dlock {

// Messages go to stderr as one line "dlock: ...", written with a single
// write(2) so lines from threads and processes do not interleave.
void set_verbosity(int level); // -1 quiet, 0 normal, 1.. verbose
int verbosity();
void write_line(std::string_view line);

template <typename... Args> void say(fmt::format_string<Args...> format, Args &&...args) {
  write_line(fmt::format(format, std::forward<Args>(args)...));
}

// Only with -v (level 1) or -vv (level 2).
template <typename... Args> void detail(int level, fmt::format_string<Args...> format, Args &&...args) {
  if (verbosity() >= level) write_line(fmt::format(format, std::forward<Args>(args)...));
}

} // namespace dlock
