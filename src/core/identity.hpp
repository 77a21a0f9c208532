#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dlock {

// Who holds a lock, as shown by status and list.
struct HolderInfo {
  std::string host;
  std::int64_t pid = 0;
  std::string user;
  std::string command;
  std::chrono::system_clock::time_point since{};
};

std::string host_name();
std::string user_name();
// The command line of a process, arguments joined by spaces, its secrets
// replaced (redact_secrets) and cut to `max_bytes`; empty if it cannot be
// read.
std::string command_line_of(pid_t pid, std::size_t max_bytes = 256);
// The same, or, where that is empty (a process in the middle of execve(2)
// has no arguments for a moment, a zombie none at all), its name as the
// kernel keeps it (/proc/PID/comm); empty if neither can be read.
std::string command_or_name_of(pid_t pid, std::size_t max_bytes = 256);
// Joins argv the way a shell user would read it, its secrets replaced
// (redact_secrets), cut to `max_bytes`.
std::string join_command(const std::vector<std::string> &argv, std::size_t max_bytes = 256);
// `bytes` random bytes from getrandom(2), as lowercase hex.
std::string random_hex(std::size_t bytes);
// Compares secrets in time independent of where they differ.
bool constant_time_equal(const std::string &a, const std::string &b);

std::int64_t to_unix_ms(std::chrono::system_clock::time_point when);
std::chrono::system_clock::time_point from_unix_ms(std::int64_t ms);
// "2026-11-29T08:40:45.123Z"
std::string format_utc(std::chrono::system_clock::time_point when);

} // namespace dlock
