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
  // A failure that the backend itself answered (AnsweredError): true.
  bool answered() const { return m_answered; }

protected:
  Error(ExitCode code, const std::string &message, bool answered)
      : std::runtime_error(message), m_code(code), m_answered(answered) {}

private:
  ExitCode m_code;
  bool m_answered = false;
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

protected:
  UnavailableError(const std::string &message, bool answered) : Error(ExitCode::unavailable, message, answered) {}
};

// The backend was reached and answered, but not with the lock: a lock
// directory that is full or failing (ENOSPC, EDQUOT, EIO), a server's error
// reply (Redis OOM, BUSY, LOADING, a read-only replica; a PostgreSQL or
// etcd error), a wait cancelled on the server. Exit 69 like a backend that
// cannot be reached, but someone may hold the lock right now, so
// --if-unavailable run never runs the job without it on such an answer.
class AnsweredError : public UnavailableError {
public:
  explicit AnsweredError(const std::string &message) : UnavailableError(message, true) {}
};

// Formats "what: strerror(errno)" for a failed system call.
std::string errno_message(const std::string &what, int error_number);

} // namespace dlock
