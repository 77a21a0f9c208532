#include "core/identity.hpp"

#include "core/error.hpp"
#include "core/redact.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <pwd.h>
#include <sys/random.h>
#include <unistd.h>

namespace dlock {

std::string host_name() {
  char buffer[HOST_NAME_MAX + 1] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "unknown";
  return buffer;
}

std::string user_name() {
  // $USER (or $LOGNAME) when set: the password database may sit behind NSS
  // services that cost milliseconds, and the name is only informational,
  // shown by status like the command line.
  for (const char *variable : {"USER", "LOGNAME"})
    if (const char *name = std::getenv(variable); name && *name) return name;
  uid_t uid = geteuid();
  passwd entry{};
  passwd *result = nullptr;
  char buffer[4096];
  if (getpwuid_r(uid, &entry, buffer, sizeof buffer, &result) == 0 && result) return result->pw_name;
  return fmt::format("uid{}", uid);
}

std::string command_line_of(pid_t pid, std::size_t max_bytes) {
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0')
    raw.pop_back();
  for (char &c : raw)
    if (c == '\0') c = ' ';
  // Secrets out before the cut, which could leave half of one behind.
  raw = redact_secrets(raw);
  if (raw.size() > max_bytes) raw = raw.substr(0, max_bytes - 3) + "...";
  return raw;
}

std::string command_or_name_of(pid_t pid, std::size_t max_bytes) {
  std::string command = command_line_of(pid, max_bytes);
  if (!command.empty()) return command;
  std::ifstream in(fmt::format("/proc/{}/comm", pid));
  std::string name;
  std::getline(in, name);
  return name;
}

std::string join_command(const std::vector<std::string> &argv, std::size_t max_bytes) {
  std::string out;
  for (const auto &arg : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    out += plain ? arg : "'" + arg + "'";
  }
  out = redact_secrets(out);
  if (out.size() > max_bytes) out = out.substr(0, max_bytes - 3) + "...";
  for (char &c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return out;
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  std::size_t filled = 0;
  while (filled < bytes) {
    ssize_t n = getrandom(raw.data() + filled, bytes - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ExitCode::internal, errno_message("getrandom failed", errno));
    }
    filled += static_cast<std::size_t>(n);
  }
  constexpr char k_digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes * 2);
  for (char c : raw) {
    auto byte = static_cast<unsigned char>(c);
    hex += k_digits[byte >> 4];
    hex += k_digits[byte & 0x0f];
  }
  return hex;
}

bool constant_time_equal(const std::string &a, const std::string &b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::int64_t to_unix_ms(std::chrono::system_clock::time_point when) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
}

std::chrono::system_clock::time_point from_unix_ms(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

std::string format_utc(std::chrono::system_clock::time_point when) {
  std::int64_t ms = to_unix_ms(when);
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", parts.tm_year + 1900, parts.tm_mon + 1,
                     parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, ms % 1000);
}

} // namespace dlock
