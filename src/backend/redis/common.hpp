#pragma once

#include "backend/backend.hpp"
#include "backend/redis/connection.hpp"
#include "core/error.hpp"

#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

// What the Redis and Redlock backends share: key names, reading the
// scripts' replies, URL options, and turning error replies into errors.
namespace dlock::backend::redis {

constexpr int k_default_port = 6379;

// The keys of one lock; all share the hash tag {NS:NAME}. `semaphore`
// and `semaphore_info` (`{NS:NAME}:sem`, `{NS:NAME}:sem-info`) hold a
// semaphore (--limit N) on the single-server backend (server_scripts.hpp),
// with `semaphore_free` (`{NS:NAME}:sem-free`) its free slot numbers;
// `readers` and `readers_info` (`{NS:NAME}:readers`, `{NS:NAME}:readers-info`)
// the readers of a shared lock (--shared), whose writer is the exclusive
// lock; `queue` and `turns` (`{NS:NAME}:queue`, `{NS:NAME}:turns`) its
// waiters, each listening on the channel `queue` + ":" + its id. `channel`
// (`{NS:NAME}:released`) is where older dlocks' waiters listen.
struct Keys {
  std::string lock, info, fence, channel, semaphore, semaphore_info, readers, readers_info, queue, turns,
      semaphore_free;
};

// "{NS:": the start of every key of a namespace. A ':' in the namespace is
// written %3A (names and namespaces cannot hold '%'), so namespace "a:b"
// with lock "c" and namespace "a" with lock "b:c" stay apart.
std::string tag_head(const std::string &lock_namespace);
Keys keys_for(const std::string &lock_namespace, const std::string &name);

// EVAL of one of the scripts in scripts.hpp on a lock's three keys.
std::vector<std::string> script_command(const char *script, const Keys &keys, std::initializer_list<std::string> args);
// The same on all ten keys, the semaphore's, the readers' and the queue's
// too (server_scripts.hpp).
std::vector<std::string> semaphore_command(const std::string &script, const Keys &keys,
                                           std::initializer_list<std::string> args);

// A semaphore's release token says so, so that renew and release of a
// lease rebuilt from (name, token) know the layout: "sem-" and 32 hex
// digits (an exclusive lock's is hex digits only).
inline constexpr std::string_view k_semaphore_token_prefix = "sem-";
std::string new_semaphore_token();
bool is_semaphore_token(std::string_view token);

// Fills in a semaphore's part of the status script's reply (run with
// semaphore_command()): {..., N or '', {{pttl, holder fields}, ...}}. A
// name with live holders is held as a semaphore of N, one HolderStatus
// each (with its slot number); its fence and time left are theirs, not
// the name's.
void add_semaphore_status(LockStatus &status, const Reply &reply, const Keys &keys);

// A reader's token (--shared): "rd-" and 32 hex digits, so that renew and
// release from (name, token) know the layout.
inline constexpr std::string_view k_shared_token_prefix = "rd-";
std::string new_shared_token();
bool is_shared_token(std::string_view token);

// Fills in the readers' part of the status script's reply: {..., {{pttl,
// holder fields}, ...}} at index 5. A name no writer holds but live readers
// do is held shared, one HolderStatus per reader with its fence and time
// left.
void add_shared_status(LockStatus &status, const Reply &reply, const Keys &keys);

std::optional<long long> to_integer(std::string_view text);
int parse_db(std::string_view text, const std::string &url);
// Glob-escapes a literal for SCAN MATCH.
std::string glob_escape(std::string_view text);
HolderInfo holder_from(const Reply &fields);
std::optional<std::uint64_t> fence_from(const Reply &fields);
// {pttl, holder fields[, last fence]} from the status and force-release
// scripts; pttl -2: free. Any other reply is 69 (UnavailableError).
LockStatus status_from(const std::string &name, const Reply &reply, const Keys &keys);

// A renewal without a length of a lock that has none recorded (taken by a
// dlock from before the holder record's `ttl` field) renews it for at
// least this long: the lease those versions' renew gave by default.
inline constexpr Millis k_unrecorded_length{30'000};
// EVAL of the renew script: `ttl` from now, 0 for the lock's own length.
std::vector<std::string> renew_command(const Keys &keys, const std::string &token, Millis ttl);
// What one server's answer to the renew script says: the length it renewed
// the lock for, or nullopt when the token no longer owns the lock there.
struct RenewReply {
  std::optional<Millis> renewed_for;
};
// nullopt: the reply is not the renew script's ({1, ms} or 0).
std::optional<RenewReply> read_renew_reply(const Reply &reply);
// Redlock: how long a majority of the nodes holds a lock that the nodes
// renewed for `lengths` (one per confirming node, each from the same send):
// the majority-th longest. nullopt when fewer than `majority` confirmed.
std::optional<Millis> quorum_length(std::vector<Millis> lengths, std::size_t majority);

// Removes `key` from `query` and returns its value, if it was there.
std::optional<std::string> take_option(std::map<std::string, std::string> &query, const std::string &key);

// When a waiter tries again without a release message: once the holder's
// lease could have run out (`holder_pttl`, or 50ms when unknown; at most
// `cap`), plus jitter, so that waiters do not stampede.
Clock::time_point retry_at(Clock::time_point now, long long holder_pttl, Millis cap, std::minstd_rand &random);

// Sleeps until `wake`, or until a signal is requested.
void sleep_until(Clock::time_point wake, const Interrupt &interrupt);

// A waiter's answer to a server (or a quorum) that is away for a moment (a
// restart, a failover, a slow or cut network): it keeps waiting and tries
// again after 50ms, doubling to 1s, until its own deadline. Call ride_out
// from the handler of the UnavailableError `away`: past `deadline` it
// rethrows it; otherwise it says so (-v), sleeps and returns.
class AwayBackoff {
public:
  void ride_out(const UnavailableError &away, const std::string &name, std::optional<Clock::time_point> deadline,
                const Interrupt &interrupt);
  void reset() { m_next = Millis(50); }

private:
  Millis m_next{50};
};

// SUBSCRIBEs `subscriber` to `channel` by `deadline`: true when subscribed,
// false (connection closed) when the server refuses (an ACL without the
// channel). Throws dlock::Error when the server cannot be reached in time.
bool subscribe(Connection &subscriber, const std::string &channel, Deadline deadline);

// Timeout, credentials and (when `tls`) the TLS options, which it takes out
// of `query`: cacert, cert, key, insecure.
ConnectionOptions connection_options(const BackendConfig &config, std::map<std::string, std::string> &query, bool tls);

// Returns a reply that is not an error; throws the error of spec.md for one
// that is: 77 for refused credentials or permissions, 69 for a read-only
// replica or any other server error. `where` names the server.
Reply check_reply(Reply reply, const std::string &where);

} // namespace dlock::backend::redis
