#pragma once

// The Lua scripts of the Redis backend that Redlock shares. Each runs atomically on the server.
// Keys of one lock share the hash tag {NS:NAME}: KEYS[1] the lock (token,
// PX ttl), KEYS[2] the holder record (hash, same expiry; its field `ttl` is
// the lock's length in ms, what a renewal without one renews it for),
// KEYS[3] the fence counter (no expiry). Numbers go back to Redis as
// integer strings: Lua's own conversion would print 1.7e+15.
//
// The single-server backend passes six more keys (semaphore_command()):
// the semaphore's, the readers' and the queue's (server_scripts.hpp).

#include <mutex>
#include <optional>
#include <string>

namespace dlock::backend::redis::lua {

// A script put together from parts, built on first use: most runs use
// none of them (a file: lock, `dlock version`), and building all at
// start-up cost some 110 KB of heap, its page faults and 30,000
// instructions in every process. Constant-initialized: nothing runs before
// main.
class Lazy {
public:
  using Build = std::string (*)();
  constexpr explicit Lazy(Build build) : m_build(build) {}
  Lazy(const Lazy &) = delete;
  Lazy &operator=(const Lazy &) = delete;
  const std::string &text() const {
    std::call_once(m_once, [this] { m_text = m_build(); });
    return *m_text;
  }
  operator const std::string &() const { return text(); } // NOLINT: a script is its text

private:
  Build m_build;
  mutable std::once_flag m_once;
  mutable std::optional<std::string> m_text;
};

// ARGV: token, ttl ms (0: the lock's own length), fallback ms. {1, ttl
// applied} if renewed, 0 if the token no longer owns the lock. A ttl
// given becomes the lock's length. A lock without a recorded length (taken
// by a dlock that did not record it) is renewed for the larger of the
// fallback and what is left of its lease: never shortened.
inline constexpr const char *renew = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local ttl = tonumber(ARGV[2])
if ttl == 0 then
  ttl = tonumber(redis.call('HGET', KEYS[2], 'ttl'))
  if not ttl or ttl < 1 then ttl = math.max(tonumber(ARGV[3]), redis.call('PTTL', KEYS[1])) end
elseif redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], 'ttl', ARGV[2])
end
ttl = string.format('%.0f', ttl)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {1, ttl}
)lua";

// The functions of the scripts on sorted sets of leases (a semaphore's
// holders, readers: members the SHA-1 of a token, scored by the server
// time in ms at which the lease ends, with a hash of fields per member),
// on the locals `now` (server ms) and `micros` that the script declares
// before them: num(x) (an integer string: Lua would print 1.7e+15),
// forget(info, m) (a member's fields), expire_set(set, also) (make both
// keys end with the set's last lease, or delete them when it is empty) and
// drop_expired(set, info). A single server's semaphore scripts set
// `free_slots` to the key of its free slot numbers (server_scripts.hpp):
// then a member that goes gives its slot back there, and that key ends
// with the others.
inline constexpr const char *lease_functions = R"lua(
local function num(x) return string.format('%.0f', x) end
local free_slots
local function forget(info, m)
  local by_slot = {}
  if free_slots then
    local slot = redis.call('HGET', info, m .. ':slot')
    if slot then
      redis.call('ZADD', free_slots, slot, slot)
      by_slot = {'slot:' .. slot}
    end
  end
  redis.call('HDEL', info, m .. ':host', m .. ':pid', m .. ':user', m .. ':command', m .. ':since', m .. ':fence',
             m .. ':ttl', m .. ':slot', unpack(by_slot))
end
local function expire_set(set, also)
  local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', set, also)
    if free_slots then redis.call('DEL', free_slots) end
    return
  end
  local left = num(math.max(tonumber(last[2]) - now, 1))
  redis.call('PEXPIRE', set, left)
  redis.call('PEXPIRE', also, left)
  if free_slots then redis.call('PEXPIRE', free_slots, left) end
end
local function drop_expired(set, info)
  local gone = redis.call('ZRANGEBYSCORE', set, '-inf', num(now))
  for _, m in ipairs(gone) do forget(info, m) end
  if #gone > 0 then
    redis.call('ZREMRANGEBYSCORE', set, '-inf', num(now))
    if free_slots then expire_set(set, info) end
  end
end
)lua";

// Renewing a member of SET (a semaphore's slot, a reader's share), on a
// single server or a Redlock node, after lease_functions, the time and the
// script's `local SET, INFO = ...`, with SET's expired members dropped.
// ARGV: token, ttl ms (0: its own length), fallback ms (a lease without a
// recorded length). {1, ttl applied} if renewed, 0 if the token holds none
// (any more). As the exclusive lock's renew script, a ttl given becomes the
// lease's length.
inline constexpr const char *renew_member = R"lua(
local member = redis.sha1hex(ARGV[1])
if not redis.call('ZSCORE', SET, member) then
  expire_set(SET, INFO)
  return 0
end
local ttl = tonumber(ARGV[2])
if ttl == 0 then
  ttl = tonumber(redis.call('HGET', INFO, member .. ':ttl'))
  if not ttl or ttl < 1 then ttl = tonumber(ARGV[3]) end
else
  redis.call('HSET', INFO, member .. ':ttl', ARGV[2])
end
redis.call('ZADD', SET, num(now + ttl), member)
expire_set(SET, INFO)
return {1, num(ttl)}
)lua";

// Takes the token ARGV[1]'s member out of SET: `removed` is 1 if it was
// there. The script goes on from there.
inline constexpr const char *drop_member = R"lua(
local member = redis.sha1hex(ARGV[1])
local removed = redis.call('ZREM', SET, member)
if removed == 1 then forget(INFO, member) end
expire_set(SET, INFO)
)lua";

} // namespace dlock::backend::redis::lua
