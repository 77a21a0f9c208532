#pragma once

#include "backend/backend.hpp"
#include "core/duration.hpp"
#include "net/net.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace dlock::backend::zookeeper {

// The answer to a four-letter word ("srvr") sent to one server, read until
// the server closes; throws UnavailableError naming `where` when there is
// no connection or no answer by `deadline` (`timeout` is only quoted).
std::string four_letter_word(const net::Address &address, const char *word, net::Deadline deadline,
                             const std::string &where, Millis timeout);

// The first of (at most three of) `servers` that closes a new connection
// at once, before the client has said anything, as ZooKeeper does to an
// address that already holds maxClientCnxns connections, as it is
// displayed; empty when none does within `wait`. For the message of a
// session that could not be set up.
std::string server_closing_new_connections(const std::vector<net::Address> &servers, Millis wait);

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
