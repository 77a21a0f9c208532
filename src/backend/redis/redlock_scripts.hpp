#pragma once

// The Lua scripts of the Redlock backend, run on each node; each runs
// atomically there. Every script gets the same five keys (redlock_command()),
// the single-server backend's layout, so that one node looks like one
// Redis server with that lock: KEYS[1] the writer's lock (token, PX ttl),
// KEYS[2] its holder record (hash: host, pid, user, command, since, ttl,
// fence), KEYS[3] the name's fence counter (no expiry), KEYS[4] the readers
// (--shared; sorted set: the SHA-1 of each reader's token, scored by the
// end of its lease in this node's server time, ms) and KEYS[5] their record
// (M:host, M:pid, M:user, M:command, M:since, M:fence, M:ttl), both expiring
// with the last reader's lease. A reader counts on a node until its own
// lease ends there, whoever else renews.

#include "backend/redis/scripts.hpp"

#include <string>

namespace dlock::backend::redis::lua::redlock {

// What the scripts that see the readers start with: lease_sets
// (scripts.hpp) on SET = KEYS[4] and INFO = KEYS[5], the expired readers
// dropped.
inline const Lazy readers_prelude{
    [] { return std::string(lease_sets.text() + "local SET, INFO = KEYS[4], KEYS[5]\ndrop_expired(SET, INFO)\n"); }};

// The writer. ARGV: token, ttl ms, host, pid, user, command. {1, stored
// fence counter, server time in µs} when this node grants, {0, pttl} when a
// writer holds it here, {0, ms until the first reader's lease ends} while
// live readers do.
inline const Lazy acquire{[] {
  return std::string(readers_prelude.text() + R"lua(
local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
if #first > 0 then return {0, num(math.max(tonumber(first[2]) - now, 1))} end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('PTTL', KEYS[1])}
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5], 'command', ARGV[6],
           'since', num(now), 'ttl', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {1, redis.call('GET', KEYS[3]) or '0', num(micros)}
)lua");
}};

// A reader. ARGV: token, ttl ms, host, pid, user, command. {1, stored fence
// counter, server time in µs} when this node grants, {0, pttl} while a
// writer holds it here.
inline const Lazy acquire_shared{[] {
  return std::string(readers_prelude.text() + R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, redis.call('PTTL', KEYS[1])} end
local m = redis.sha1hex(ARGV[1])
redis.call('ZADD', KEYS[4], num(now + tonumber(ARGV[2])), m)
redis.call('HSET', KEYS[5], m .. ':host', ARGV[3], m .. ':pid', ARGV[4], m .. ':user', ARGV[5], m .. ':command',
           ARGV[6], m .. ':since', num(now), m .. ':ttl', ARGV[2])
expire_set(SET, INFO)
return {1, redis.call('GET', KEYS[3]) or '0', num(micros)}
)lua");
}};

// ARGV: fence, token. "Set if greater": {1, counter before} if the fence
// was greater than the node's counter and is stored now (and recorded with
// the writer or reader whose token it is, if it holds here); {0, counter}
// if the counter is already there or beyond, and nothing changed.
inline constexpr const char *store_fence = R"lua(
local before = tonumber(redis.call('GET', KEYS[3])) or 0
if tonumber(ARGV[1]) <= before then return {0, string.format('%.0f', before)} end
redis.call('SET', KEYS[3], ARGV[1])
if redis.call('GET', KEYS[1]) == ARGV[2] then
  redis.call('HSET', KEYS[2], 'fence', ARGV[1])
else
  local m = redis.sha1hex(ARGV[2])
  if redis.call('ZSCORE', KEYS[4], m) then redis.call('HSET', KEYS[5], m .. ':fence', ARGV[1]) end
end
return {1, string.format('%.0f', before)}
)lua";

// The writer's renew is lua::renew (scripts.hpp). The same for a reader:
// {1, ttl applied}, or 0 if the token reads here
// no more (its lease ended: it is not brought back).
inline const Lazy renew_shared{[] { return std::string(readers_prelude.text() + renew_member); }};

// The writer's release is lua::release (scripts.hpp). The same for a
// reader:
inline const Lazy release_shared{[] {
  return std::string(readers_prelude.text() + drop_member + R"lua(
if removed == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 'released')
return 1
)lua");
}};

// ARGV: token. Takes back a copy of a lock that did not reach a quorum:
// compare-and-delete without telling waiters, as nothing was released.
inline constexpr const char *take_back = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
)lua";

// The same for a reader.
inline const Lazy take_back_shared{
    [] { return std::string(readers_prelude.text() + drop_member + "return removed\n"); }};

// ARGV: channel. Breaks the writer's lock and every reader's share here:
// {1} (waiters are told), or nil when none was held.
inline const Lazy force_release{[] {
  return std::string(readers_prelude.text() + R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[4]) == 0 then return false end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4], KEYS[5])
redis.call('PUBLISH', ARGV[1], 'released')
return {1}
)lua");
}};

// {pttl, holder fields, last fence, SHA-1 of the token or '', {{SHA-1 of
// a reader's token, pttl, its fields}, ...} of the live readers}: nodes that
// hold the same token can be counted without the token leaving the server.
inline constexpr const char *status = R"lua(
local token = redis.call('GET', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. string.format('%.0f', now), '+inf', 'WITHSCORES')
local readers = {}
for i = 1, #live, 2 do
  local m = live[i]
  local v = redis.call('HMGET', KEYS[5], m .. ':host', m .. ':pid', m .. ':user', m .. ':command', m .. ':since',
                       m .. ':fence')
  readers[#readers + 1] = {m, string.format('%.0f', tonumber(live[i + 1]) - now),
                           {'host', v[1] or '', 'pid', v[2] or '', 'user', v[3] or '', 'command', v[4] or '',
                            'since', v[5] or '', 'fence', v[6] or ''}}
end
return {redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('GET', KEYS[3]) or '',
        token and redis.sha1hex(token) or '', readers}
)lua";

} // namespace dlock::backend::redis::lua::redlock
