#pragma once

#include "backend/postgres/pg_session.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct pg_conn;

namespace dlock::backend::postgres {

using SteadyClock = std::chrono::steady_clock;

// The server closed or lost the session (terminated, restarted, shut
// down, connection reset): whatever it held is gone.
// Unavailable (69) where nobody handles it specially.
class SessionGone : public UnavailableError {
public:
  using UnavailableError::UnavailableError;
};

struct Rows {
  std::vector<std::vector<std::optional<std::string>>> rows;
  std::string sqlstate; // empty: success
  std::string error;    // the server's message when sqlstate is set
  bool ok() const { return sqlstate.empty(); }
};

// Throws the dlock::Error of a statement that failed with `rows`: 77 for
// refused credentials or privileges, 69 otherwise. `label`: the server.
[[noreturn]] void fail(const std::string &label, const Rows &rows);

// One libpq connection driven without blocking: every step waits on the
// socket with poll() until a deadline of ours (libpq's own connect_timeout
// counts whole seconds and queries have none).
class PgConnection {
public:
  // `keywords`/`values` as for PQconnectStartParams (expand_dbname on).
  // Throws dlock::Error: 77 for refused credentials, 78 for a database
  // that does not exist or an unusable URL, 69 otherwise.
  PgConnection(const std::vector<std::string> &keywords, const std::vector<std::string> &values,
               SteadyClock::time_point deadline, const std::string &label);
  ~PgConnection();
  PgConnection(const PgConnection &) = delete;
  PgConnection &operator=(const PgConnection &) = delete;

  // Runs `sql` (with text parameters $1, $2, ...) and returns its rows or
  // the server's error. Throws SessionGone when the connection breaks,
  // UnavailableError when no answer comes by `deadline`; a readable
  // `interrupt_fd` cancels the query (PQcancel) and its error is returned.
  Rows query(const std::string &sql, const std::vector<std::string> &params, SteadyClock::time_point deadline,
             int interrupt_fd = -1);
  // Sends `sql` without waiting for its answer; the next query() reads
  // (and drops) it first, as it does the late answer of one that timed out.
  void send(const std::string &sql, const std::vector<std::string> &params);
  // The answer to the statement send() sent (a dlock bug if there is none
  // to read), by `deadline`, as query() would return it.
  Rows answer(SteadyClock::time_point deadline);
  // Waits, idle, for a notification on a channel this session LISTENs on
  // until `until` or a readable `interrupt_fd`; whether one came (all
  // pending ones are read). Throws SessionGone when the connection breaks.
  bool wait_notification(SteadyClock::time_point until, int interrupt_fd);
  // Whether bytes from the server wait to be read (news: its error, its end).
  bool input_waiting() const;
  int socket() const;
  // Sets the client's end of a TCP connection to `keepalive` (a UNIX
  // socket has none: nothing to do). Best effort: this end only decides
  // how soon dlock gives up on a server that vanished.
  void set_keepalive(const Keepalive &keepalive);
  int server_version() const;
  int backend_pid() const;
  bool broken() const { return m_broken; }

private:
  void wait_socket(short events, SteadyClock::time_point deadline, int interrupt_fd, bool *interrupted);
  Rows collect(SteadyClock::time_point deadline, int interrupt_fd);
  void cancel();
  [[noreturn]] void gone(const std::string &what);

  pg_conn *m_conn = nullptr;
  std::string m_label;
  bool m_broken = false;
  std::uint64_t m_received_at_send = 0; // bytes_received() when the last statement was sent
  bool m_unanswered = false;            // a query timed out; its answer is read before the next
};

} // namespace dlock::backend::postgres
