#include "backend/redis/connection.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "net/net.hpp"

#include <fmt/format.h>

namespace dlock::backend::redis {

namespace {

Millis waited(Deadline since) { return std::chrono::round<Millis>(Clock::now() - since); }

} // namespace

Connection::Connection(Address address, ConnectionOptions options)
    : m_address(std::move(address)), m_options(std::move(options)),
      m_where(fmt::format("redis at {}", m_address.display())) {
  // A reply from a server close by takes tens of microseconds: see Stream.
  m_stream.set_spin(true);
}

Connection::~Connection() { close(); }

void Connection::close() {
  m_stream.close();
  m_parser.reset();
  m_prelude.clear();
  m_prelude_replies = 0;
}

void Connection::fail(const std::string &message) {
  close();
  throw UnavailableError(fmt::format("{}: {}", m_where, message));
}

void Connection::connect(Deadline deadline) {
  close();
  m_stream.connect(m_address, m_options.tls, deadline, m_where, m_options.timeout);
  if (m_options.password) {
    if (m_options.user.empty())
      append_command(m_prelude, {"AUTH", *m_options.password});
    else
      append_command(m_prelude, {"AUTH", m_options.user, *m_options.password});
    ++m_prelude_replies;
  }
  if (m_options.db != 0) {
    append_command(m_prelude, {"SELECT", std::to_string(m_options.db)});
    ++m_prelude_replies;
  }
}

void Connection::write_all(const std::string &bytes, Deadline deadline) {
  switch (m_stream.write_all(bytes, deadline)) {
  case net::Io::data:
    return;
  case net::Io::timeout:
    fail(fmt::format("no progress sending within {}", format_duration(m_options.timeout)));
  default:
    fail(m_stream.error());
  }
}

bool Connection::drop_if_closed() {
  // A server that restarted since our last request closed this
  // connection: a request on it would fail although the server is back.
  if (!m_stream.closed_by_peer()) return false;
  close();
  return true;
}

void Connection::send(const std::string &commands, Deadline deadline) {
  drop_if_closed();
  if (!m_stream.is_open()) connect(deadline);
  if (m_prelude.empty()) {
    write_all(commands, deadline);
  } else {
    std::string bytes = std::move(m_prelude) + commands;
    m_prelude.clear();
    write_all(bytes, deadline);
  }
}

std::optional<Reply> Connection::read(Deadline deadline, int wake_fd) {
  for (;;) {
    std::optional<Reply> reply;
    try {
      reply = m_parser.next();
      if (!reply) {
        // Bytes until a reply is complete: within the deadline, and at
        // most k_max_redis_reply of them for this reply.
        std::size_t pending = m_parser.pending();
        if (pending >= k_max_redis_reply) fail(net::too_large_message(k_max_redis_reply));
        net::Io io = m_stream.read_bounded(k_max_redis_reply - pending, deadline, wake_fd,
                                           [this, &reply](const char *bytes, std::size_t size) {
                                             m_parser.feed(bytes, size);
                                             reply = m_parser.next();
                                             return reply.has_value();
                                           });
        if (io == net::Io::timeout || io == net::Io::woken) {
          if (!reply) return std::nullopt;
        } else if (io == net::Io::closed) {
          fail("connection closed by the server");
        } else if (io == net::Io::error) {
          fail(m_stream.error());
        }
      }
    } catch (const Error &error) {
      // A malformed reply: the parser is in its error state and the bytes
      // after it mean nothing. Connect anew for the next request.
      if (error.code() != ExitCode::unavailable || !m_stream.is_open()) throw;
      fail(error.what());
    }
    if (m_prelude_replies == 0) return reply;
    --m_prelude_replies;
    if (!reply->is_error()) continue;
    std::string text = reply->str;
    close();
    if (text.find("without any password configured") != std::string::npos) {
      throw Error(ExitCode::auth, fmt::format("{} has no password set, but dlock was given one; drop the password "
                                              "or set one on the server (requirepass or ACL)",
                                              m_where));
    }
    if (reply->error_code() == "WRONGPASS" || text.find("invalid password") != std::string::npos ||
        reply->error_code() == "NOAUTH")
      throw Error(ExitCode::auth, fmt::format("{} refused the credentials: {}", m_where, text));
    throw ConfigError(fmt::format("{}: {}", m_where, text));
  }
}
Deadline Connection::round_trip_deadline(std::optional<Deadline> deadline) const {
  Deadline until = Clock::now() + m_options.timeout;
  return deadline && *deadline < until ? *deadline : until;
}

Reply Connection::call(std::initializer_list<std::string_view> args, std::optional<Deadline> deadline) {
  std::string bytes;
  append_command(bytes, args);
  return call_formatted(bytes, deadline);
}

Reply Connection::call_formatted(const std::string &bytes, std::optional<Deadline> deadline) {
  return std::move(round_trip(bytes, 1, deadline).front());
}

std::vector<Reply> Connection::pipeline(const std::vector<std::vector<std::string>> &commands,
                                        std::optional<Deadline> deadline) {
  std::string bytes;
  for (const auto &command : commands)
    append_command(bytes, command);
  return round_trip(bytes, commands.size(), deadline);
}

std::vector<Reply> Connection::round_trip(const std::string &bytes, std::size_t count,
                                          std::optional<Deadline> deadline) {
  Deadline started = Clock::now(), until = round_trip_deadline(deadline);
  send(bytes, until);
  std::vector<Reply> replies;
  replies.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::optional<Reply> reply = read(until);
    if (!reply) fail(fmt::format("no answer within {}", format_duration(waited(started))));
    replies.push_back(std::move(*reply));
  }
  return replies;
}

} // namespace dlock::backend::redis
