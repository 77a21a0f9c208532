#pragma once

// The Lua scripts of the Redlock backend, run on each node.

// Redlock: the same keys on each of N independent nodes.
namespace dlock::backend::redis::lua::redlock {

// ARGV: token, ttl ms, host, pid, user, command. {1, stored fence counter,
// server time in µs} when this node grants, {0, pttl} when it is held.
inline constexpr const char *acquire = R"lua(
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('PTTL', KEYS[1])}
end
local now = redis.call('TIME')
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5], 'command', ARGV[6],
           'since', string.format('%.0f', tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)),
           'ttl', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {1, redis.call('GET', KEYS[3]) or '0', string.format('%.0f', tonumber(now[1]) * 1000000 + tonumber(now[2]))}
)lua";

// ARGV: fence, token. "Set if greater": {1, counter before} if the fence
// was greater than the node's counter and is stored now (and recorded with
// the holder if the token holds the lock here); {0, counter} if the
// counter is already there or beyond, and nothing changed.
inline constexpr const char *store_fence = R"lua(
local before = tonumber(redis.call('GET', KEYS[3])) or 0
if tonumber(ARGV[1]) <= before then return {0, string.format('%.0f', before)} end
redis.call('SET', KEYS[3], ARGV[1])
if redis.call('GET', KEYS[1]) == ARGV[2] then redis.call('HSET', KEYS[2], 'fence', ARGV[1]) end
return {1, string.format('%.0f', before)}
)lua";

// ARGV: token. Takes back a copy of a lock that did not reach a quorum:
// compare-and-delete without telling waiters, as nothing was released.
inline constexpr const char *take_back = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
)lua";

// {pttl, holder fields, last fence, SHA-1 of the token or ''}: nodes that
// hold the same token can be counted without the token leaving the server.
inline constexpr const char *status = R"lua(
local token = redis.call('GET', KEYS[1])
return {redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('GET', KEYS[3]) or '',
        token and redis.sha1hex(token) or ''}
)lua";

} // namespace dlock::backend::redis::lua::redlock
