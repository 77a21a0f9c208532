#include "backend/postgres/pg_connection.hpp"

#include "backend/postgres/libpq.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "net/net.hpp"
#include "net/stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <linux/tcp.h> // struct tcp_info with tcpi_bytes_received, which glibc's netinet/tcp.h lacks
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

namespace dlock::backend::postgres {

namespace {

// libpq's messages end in a newline and may span lines ("FATAL: ...\nDETAIL: ..."): one line.
std::string one_line(const char *message) {
  std::string text = message ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\t') c = ' ';
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  }
  return out;
}

// The first line only: "FATAL:  terminating connection due to administrator
// command" rather than libpq's guesses that follow it.
std::string first_line(const char *message) {
  std::string text = message ? message : "";
  text = text.substr(0, text.find('\n'));
  auto start = text.find_first_not_of(' ');
  return start == std::string::npos ? std::string() : text.substr(start);
}

bool contains(const std::string &text, std::string_view part) { return text.find(part) != std::string::npos; }

// libpq keeps whatever the server sends until a message is complete, and
// takes a message's length from the server: a hostile server's endless
// stream would grow dlock without bound until the deadline. What the
// kernel received on a TCP socket bounds it (a UNIX socket's peer is
// local and gives 0): at most this much for the start-up (TLS, the
// authentication exchange and the server's parameters take a few KiB),
// and net::k_max_reply per answer.
constexpr std::uint64_t k_max_startup = 1u << 20;

std::uint64_t bytes_received(int fd) {
  tcp_info info{};
  socklen_t length = sizeof info;
  if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0 ||
      length < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received)
    return 0;
  return info.tcpi_bytes_received;
}

} // namespace

void fail(const std::string &label, const Rows &rows) {
  if (rows.sqlstate.rfind("28", 0) == 0 || rows.sqlstate == "42501")
    throw Error(ExitCode::auth, fmt::format("{}: {}", label, rows.error));
  if (rows.sqlstate.empty()) throw UnavailableError(fmt::format("{}: {}", label, rows.error));
  throw AnsweredError(fmt::format("{}: {} (SQLSTATE {})", label, rows.error, rows.sqlstate));
}

PgConnection::PgConnection(const std::vector<std::string> &keywords, const std::vector<std::string> &values,
                           SteadyClock::time_point deadline, const std::string &label)
    : m_label(label) {
  const Libpq &pq = libpq();
  std::vector<const char *> keys, vals;
  for (std::size_t i = 0; i < keywords.size(); ++i) {
    keys.push_back(keywords[i].c_str());
    vals.push_back(values[i].c_str());
  }
  keys.push_back(nullptr);
  vals.push_back(nullptr);
  // A URL libpq cannot parse is a configuration error; anything that goes
  // wrong after that (even at once, as a missing unix socket does) is not.
  char *parse_error = nullptr;
  if (PQconninfoOption *parsed = pq.conninfoParse(values.front().c_str(), &parse_error)) {
    pq.conninfoFree(parsed);
  } else {
    std::string why = parse_error ? one_line(parse_error) : "cannot parse the URL";
    if (parse_error) pq.freemem(parse_error);
    throw ConfigError(fmt::format("{}: {}", m_label, why));
  }
  m_conn = pq.connectStartParams(keys.data(), vals.data(), 1);
  if (!m_conn) throw Error(ExitCode::internal, "libpq could not allocate a connection");
  // Server notices (a WARNING before a shutdown) are not for the user's
  // terminal: -vv shows them.
  pq.setNoticeProcessor(
      m_conn, [](void *, const char *message) { detail(2, "postgres notice: {}", one_line(message)); }, nullptr);
  // The destructor does not run when the constructor throws: let go of
  // the connection here then.
  try {
    for (PostgresPollingStatusType state = pq.status(m_conn) == CONNECTION_BAD ? PGRES_POLLING_FAILED
                                                                               : PGRES_POLLING_WRITING;
         ;) {
      if (state == PGRES_POLLING_OK) break;
      if (state == PGRES_POLLING_FAILED) {
        std::string why = one_line(pq.errorMessage(m_conn));
        if (contains(why, "password authentication failed") || contains(why, "no password supplied") ||
            contains(why, "authentication failed") || contains(why, "pg_hba.conf") ||
            (contains(why, "role \"") && contains(why, "does not exist")) || contains(why, "permission denied"))
          throw Error(ExitCode::auth, fmt::format("{}: {}", m_label, why));
        if ((contains(why, "database \"") && contains(why, "does not exist")) || contains(why, "connection option"))
          throw ConfigError(fmt::format("{}: {}", m_label, why));
        throw UnavailableError(fmt::format("cannot connect to PostgreSQL at {}: {}", m_label, why));
      }
      bool unused = false;
      if (SteadyClock::now() >= deadline)
        throw UnavailableError(
            fmt::format("cannot connect to PostgreSQL at {}: no connection within the connect timeout", m_label));
      wait_socket(state == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline, -1, &unused);
      if (bytes_received(pq.socket(m_conn)) > k_max_startup)
        throw UnavailableError(
            fmt::format("cannot connect to PostgreSQL at {}: {}", m_label, net::too_large_message(k_max_startup)));
      state = pq.connectPoll(m_conn);
    }
  } catch (...) {
    pq.finish(m_conn);
    m_conn = nullptr;
    throw;
  }
  pq.setnonblocking(m_conn, 1);
}

PgConnection::~PgConnection() {
  if (m_conn) libpq().finish(m_conn);
}

int PgConnection::socket() const { return libpq().socket(m_conn); }
int PgConnection::server_version() const { return libpq().serverVersion(m_conn); }
int PgConnection::backend_pid() const { return libpq().backendPID(m_conn); }

void PgConnection::set_keepalive(const Keepalive &keepalive) {
  int fd = socket();
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (fd < 0 || getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0 ||
      (address.ss_family != AF_INET && address.ss_family != AF_INET6))
    return;
  auto set = [fd](int option, long value) {
    int number = static_cast<int>(std::min<long>(value, 0x7fffffff));
    setsockopt(fd, IPPROTO_TCP, option, &number, sizeof number);
  };
  set(TCP_KEEPIDLE, keepalive.idle);
  set(TCP_KEEPINTVL, keepalive.interval);
  set(TCP_KEEPCNT, keepalive.count);
  set(TCP_USER_TIMEOUT, keepalive.user_timeout.count());
}

void PgConnection::gone(const std::string &what) {
  m_broken = true;
  throw SessionGone(fmt::format("{}: {}", what, first_line(libpq().errorMessage(m_conn))));
}

void PgConnection::wait_socket(short events, SteadyClock::time_point deadline, int interrupt_fd, bool *interrupted) {
  pollfd items[2] = {{libpq().socket(m_conn), events, 0}, {interrupt_fd, POLLIN, 0}};
  for (;;) {
    int ready = ::poll(items, interrupt_fd >= 0 ? 2 : 1, net::millis_until(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0 && interrupt_fd >= 0 && (items[1].revents & POLLIN)) *interrupted = true;
    return;
  }
}

void PgConnection::cancel() {
  const Libpq &pq = libpq();
  if (PGcancel *handle = pq.getCancel(m_conn)) {
    char error[256];
    pq.cancel(handle, error, sizeof error);
    pq.freeCancel(handle);
  }
}

Rows PgConnection::collect(SteadyClock::time_point deadline, int interrupt_fd) {
  const Libpq &pq = libpq();
  Rows out;
  bool cancelled = false;
  for (;;) {
    // Flush what is left of the request, then read until libpq has a whole result.
    int flushed = pq.flush(m_conn);
    if (flushed < 0) gone("the connection broke");
    while (flushed == 0 && pq.isBusy(m_conn)) {
      if (SteadyClock::now() >= deadline) {
        // The answer may still come: the next query reads it first.
        m_unanswered = true;
        throw UnavailableError(fmt::format("{}: no answer from PostgreSQL in time", m_label));
      }
      bool interrupted = false;
      wait_socket(POLLIN, deadline, cancelled ? -1 : interrupt_fd, &interrupted);
      if (interrupted && !cancelled) {
        cancel();
        cancelled = true;
        // The server answers a cancel at once; do not wait for ever if not.
        deadline = std::min(deadline, SteadyClock::now() + Millis(2000));
      }
      if (bytes_received(socket()) - m_received_at_send > net::k_max_reply) {
        m_broken = true;
        throw SessionGone(fmt::format("{}: {}", m_label, net::too_large_message(net::k_max_reply)));
      }
      if (!pq.consumeInput(m_conn)) gone("the connection broke");
    }
    if (flushed == 1) {
      bool unused = false;
      wait_socket(POLLOUT, deadline, -1, &unused);
      if (SteadyClock::now() >= deadline) {
        m_unanswered = true;
        throw UnavailableError(fmt::format("{}: could not send to PostgreSQL in time", m_label));
      }
      continue;
    }
    PGresult *result = pq.getResult(m_conn);
    if (!result) return out;
    ExecStatusType status = pq.resultStatus(result);
    if (status == PGRES_TUPLES_OK && out.ok()) {
      int rows = pq.ntuples(result);
      int columns = pq.nfields(result);
      for (int r = 0; r < rows; ++r) {
        std::vector<std::optional<std::string>> row;
        for (int c = 0; c < columns; ++c)
          row.push_back(pq.getisnull(result, r, c) ? std::nullopt
                                                   : std::optional<std::string>(pq.getvalue(result, r, c)));
        out.rows.push_back(std::move(row));
      }
    } else if (status == PGRES_FATAL_ERROR && out.ok()) {
      const char *state = pq.resultErrorField(result, PG_DIAG_SQLSTATE);
      out.sqlstate = state ? state : "XX000";
      out.error = one_line(pq.resultErrorField(result, PG_DIAG_MESSAGE_PRIMARY));
    }
    pq.clear(result);
    if (pq.status(m_conn) == CONNECTION_BAD) {
      m_broken = true;
      throw SessionGone(fmt::format("the server closed the session{}", out.ok() ? "" : ": " + out.error));
    }
  }
}

void PgConnection::send(const std::string &sql, const std::vector<std::string> &params) {
  const Libpq &pq = libpq();
  if (m_broken) throw SessionGone("the session was lost earlier");
  if (m_unanswered) throw Error(ExitCode::internal, "dlock bug: a second statement sent before an answer");
  std::vector<const char *> values;
  for (const auto &param : params)
    values.push_back(param.c_str());
  m_received_at_send = bytes_received(socket());
  if (!pq.sendQueryParams(m_conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                          nullptr, 0))
    gone("the connection broke");
  m_unanswered = true;
}

Rows PgConnection::answer(SteadyClock::time_point deadline) {
  if (m_broken) throw SessionGone("the session was lost earlier");
  if (!m_unanswered) throw Error(ExitCode::internal, "dlock bug: an answer read for no statement");
  m_unanswered = false; // collect() sets it again if the deadline passes
  return collect(deadline, -1);
}

bool PgConnection::wait_notification(SteadyClock::time_point until, int interrupt_fd) {
  const Libpq &pq = libpq();
  if (m_broken) throw SessionGone("the session was lost earlier");
  for (;;) {
    bool heard = false;
    while (PGnotify *notify = pq.notifies(m_conn)) {
      pq.freemem(notify);
      heard = true;
    }
    if (heard) return true;
    if (SteadyClock::now() >= until) return false;
    bool interrupted = false;
    wait_socket(POLLIN, until, interrupt_fd, &interrupted);
    if (interrupted) return false;
    // Notifications are small: a flood of them is a broken server.
    if (bytes_received(socket()) - m_received_at_send > net::k_max_reply) {
      m_broken = true;
      throw SessionGone(fmt::format("{}: {}", m_label, net::too_large_message(net::k_max_reply)));
    }
    if (!pq.consumeInput(m_conn) || pq.status(m_conn) == CONNECTION_BAD) gone("the connection broke");
  }
}

bool PgConnection::input_waiting() const {
  pollfd item{socket(), POLLIN, 0};
  return poll(&item, 1, 0) > 0;
}

Rows PgConnection::query(const std::string &sql, const std::vector<std::string> &params,
                         SteadyClock::time_point deadline, int interrupt_fd) {
  if (m_broken) throw SessionGone("the session was lost earlier");
  if (m_unanswered) {
    m_unanswered = false;  // collect() sets it again if the deadline passes
    collect(deadline, -1); // a late or unawaited answer, dropped
  }
  send(sql, params);
  m_unanswered = false;
  return collect(deadline, interrupt_fd);
}

} // namespace dlock::backend::postgres
