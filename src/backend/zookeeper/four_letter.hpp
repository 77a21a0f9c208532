#pragma once

#include "backend/backend.hpp"
#include "core/duration.hpp"
#include "core/unique_fd.hpp"
#include "net/net.hpp"

#include <poll.h>

#include <string>
#include <string_view>
#include <vector>

namespace dlock::backend::zookeeper {

// The answer to a four-letter word ("srvr") sent to one server, read until
// the server closes; throws UnavailableError naming `where` when there is
// no connection or no answer by `deadline` (`timeout` is only quoted).
std::string four_letter_word(const net::Address &address, const char *word, net::Deadline deadline,
                             const std::string &where, Millis timeout);

// Silent connections to (at most three of) `servers`, watched for one the
// server closes at once, before the client has said anything, as ZooKeeper
// does to an address that already holds maxClientCnxns connections. For
// the message of a session that could not be set up. One more connection
// to each server every 250ms, four at most (a server at its limit may let
// one in while a slot is free for a moment), all kept open until the probe
// ends: a loaded server can take seconds to accept and close one.
class ClosingProbe {
public:
  explicit ClosingProbe(std::vector<net::Address> servers) : m_servers(std::move(servers)) {}
  // Watches until `until` (once, without waiting, when it has passed): the
  // server that closed a connection, as it is displayed, or empty.
  std::string watch(net::Deadline until);

private:
  std::vector<net::Address> m_servers;
  std::vector<std::string> m_names;
  std::vector<UniqueFd> m_probes;
  std::vector<pollfd> m_items;
  net::Deadline m_next_round{};
  std::string m_closing;
};

// The value after `key` on its line of such an answer ("Mode:" gives
// "leader"), trimmed; empty if absent.
std::string line_value(const std::string &text, std::string_view key);

// What a server's answer to "srvr" says about it, for ping: its version
// and mode ("3.8.0 (leader)"), or why it cannot serve locks (`error`).
struct SrvrAnswer {
  std::string version;
  std::string error;
};
SrvrAnswer read_srvr(const std::string &answer);

// "srvr" to every server at once, each within `timeout`: ping's nodes and,
// for more than one, whether a majority of them serves.
PingResult ping_servers(const std::vector<net::Address> &addresses, Millis timeout);

} // namespace dlock::backend::zookeeper
