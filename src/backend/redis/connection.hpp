#pragma once

#include "backend/redis/resp.hpp"
#include "core/duration.hpp"
#include "net/net.hpp"
#include "net/stream.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dlock::backend::redis {

using Clock = std::chrono::steady_clock;
using net::Deadline;

using net::Address;
using net::parse_address;
using net::TlsOptions;

struct ConnectionOptions {
  Millis timeout{2000}; // bounds connecting, and every round trip
  std::string user;     // ACL user; empty: the default user
  std::optional<std::string> password;
  int db = 0;
  TlsOptions tls;
};

// The size limit of one Redis reply. dlock's largest are SCAN pages of
// 1000 key names (about 250 KiB at most); less than net::k_max_reply, so
// that a Redlock URL of several hostile nodes, each read at once, stays
// within a few MiB in all.
inline constexpr std::size_t k_max_redis_reply = 2u << 20;

// One connection to one Redis server over a net::Stream (TCP, unix or
// TLS); hiredis only parses replies. Connects lazily; after any I/O error,
// timeout or malformed reply the connection is closed (a late reply must
// never be taken for the answer to the next command, nor a parser left in
// its error state) and the next command reconnects. A reply is read within
// the deadline and at most k_max_redis_reply bytes.
// AUTH and SELECT travel in the same write as the first command.
//
// Errors are dlock::Error: 69 when the server cannot be reached or does
// not answer in time, 77 when it refuses the credentials, 78 for unusable
// settings. Error *replies* to commands are returned, not thrown.
class Connection {
public:
  Connection(Address address, ConnectionOptions options);
  ~Connection();
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;

  // One command, one reply, within the timeout (or `deadline` if earlier).
  Reply call(std::initializer_list<std::string_view> args, std::optional<Deadline> deadline = std::nullopt);
  // The same for a command already in RESP (see append_command).
  Reply call_formatted(const std::string &command, std::optional<Deadline> deadline = std::nullopt);
  // `count` commands already in RESP, in one write; their replies in order.
  std::vector<Reply> round_trip(const std::string &commands, std::size_t count,
                                std::optional<Deadline> deadline = std::nullopt);
  // Several commands in one write; their replies in order.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>> &commands,
                              std::optional<Deadline> deadline = std::nullopt);

  // The parts of a round trip, for pub/sub and for talking to several
  // servers at once: send() queues bytes (connecting first if needed) and
  // writes them; read() waits for the next reply until `deadline`, and
  // returns nullopt if `deadline` passes or `wake_fd` (when >= 0) becomes
  // readable first. A timeout in read() does not close the connection; a
  // malformed or oversized reply does (UnavailableError).
  void send(const std::string &commands, Deadline deadline);
  std::optional<Reply> read(Deadline deadline, int wake_fd = -1);

  // Connects now if not connected (TLS handshake included).
  void ensure_connected(Deadline deadline) {
    if (!m_stream.is_open()) connect(deadline);
  }
  void close();
  bool is_open() const { return m_stream.is_open(); }
  // Closes the connection if the server has closed its end (it restarted):
  // the next request then connects anew instead of failing. True if so.
  bool drop_if_closed();
  int fd() const { return m_stream.fd(); }
  const Address &address() const { return m_address; }
  // "redis at host:port" for messages.
  const std::string &where() const { return m_where; }
  // Now + the timeout, or `deadline` if that is earlier.
  Deadline round_trip_deadline(std::optional<Deadline> deadline = std::nullopt) const;

private:
  void connect(Deadline deadline);
  void write_all(const std::string &bytes, Deadline deadline);
  [[noreturn]] void fail(const std::string &message);

  Address m_address;
  ConnectionOptions m_options;
  std::string m_where;
  net::Stream m_stream;
  ReplyParser m_parser;
  std::string m_prelude; // AUTH / SELECT, sent with the first command
  int m_prelude_replies = 0;
};

} // namespace dlock::backend::redis
