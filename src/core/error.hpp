#pragma once

#include "core/exit_code.hpp"

#include <stdexcept>
#include <string>

namespace dlock {

// A real failure that ends the command. The message is the user-facing
// sentence printed after "dlock: "; the code is the exit status. Ordinary
// outcomes (lock busy, token no longer owns the lock) are results, not errors.
class Error : public std::runtime_error {
public:
  Error(ExitCode code, const std::string &message) : std::runtime_error(message), m_code(code) {}

  ExitCode code() const { return m_code; }

private:
  ExitCode m_code;
};

class UsageError : public Error {
public:
  explicit UsageError(const std::string &message) : Error(ExitCode::usage, message) {}
};

class ConfigError : public Error {
public:
  explicit ConfigError(const std::string &message) : Error(ExitCode::config, message) {}
};

class UnavailableError : public Error {
public:
  explicit UnavailableError(const std::string &message) : Error(ExitCode::unavailable, message) {}
};

// Formats "what: strerror(errno)" for a failed system call.
std::string errno_message(const std::string &what, int error_number);

} // namespace dlock
