#pragma once

// The Lua scripts of the Redlock backend, run on each node; each runs
// atomically there. Every script gets the single-server backend's ten keys
// (redlock_command() is semaphore_command()), so that one node looks like
// one Redis server with that lock: KEYS[1] the writer's lock (token, PX
// ttl), KEYS[2] its holder record (hash: host, pid, user, command, since,
// ttl, fence), KEYS[3] the name's fence counter (no expiry), KEYS[6] the
// readers (--shared; sorted set: the SHA-1 of each reader's token, scored
// by the end of its lease in this node's server time, ms) and KEYS[7] their
// record (M:host, M:pid, M:user, M:command, M:since, M:fence, M:ttl), both
// expiring with the last reader's lease. A reader counts on a node until its
// own lease ends there, whoever else renews. KEYS[4] and KEYS[5] (a
// semaphore's) stay empty.
//
// KEYS[8] and KEYS[9] are each node's queue of waiters and their turns,
// kept by the single-server backend's q_* functions (server_scripts.hpp):
// a waiter that a node finds busy joins its queue there, and a release, a
// take-back or a force-release on a node wakes that node's head (or the
// readers in a row at its head) on its own channel, not every waiter. On
// Redlock the queue says only who tries when: a node grants SET NX PX to
// whoever asks first, and mutual exclusion comes from the majority alone.
// The nodes' queues can differ in order (waiters join them one node at a
// time), so a release wakes at most one waiter per node.

#include "backend/redis/scripts.hpp"
#include "backend/redis/server_scripts.hpp"

#include <string>

namespace dlock::backend::redis::lua::redlock {

// What the scripts that see the readers start with: the single-server
// prelude (server_scripts.hpp: the clock, lease_functions and the queue's
// q_*) on SET = KEYS[6] and INFO = KEYS[7], the expired readers dropped.
inline const Lazy readers_prelude{[] {
  return std::string(server::prelude.text() + "clock()\nlocal SET, INFO = KEYS[6], KEYS[7]\ndrop_expired(SET, INFO)\n");
}};

// The writer. ARGV: token, ttl ms, host, pid, user, command, the waiter's
// id ('' for a try, which does not wait). {1, stored fence counter, server
// time in µs} when this node grants (a waiter's turn here ends, but it
// keeps its place: should its try fail on the majority, it takes its copy
// back, which wakes the head here, itself; once it holds, the first
// wake-up here finds its channel without a listener and drops it),
// {0, pttl} when a writer holds it here, {0, ms until the first reader's
// lease ends} while live readers do; a waiter refused joins the queue here
// (or keeps its place; a turn it could not use ends).
inline const Lazy acquire{[] {
  return std::string(readers_prelude.text() + R"lua(
local me = ARGV[7] ~= '' and ('x:' .. ARGV[7]) or nil
local first = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
if #first > 0 then
  q_join(me)
  return {0, num(math.max(tonumber(first[2]) - now, 1))}
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  q_join(me)
  return {0, redis.call('PTTL', KEYS[1])}
end
if me then redis.call('ZREM', KEYS[9], me) end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5], 'command', ARGV[6],
           'since', num(now), 'ttl', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {1, redis.call('GET', KEYS[3]) or '0', num(micros)}
)lua");
}};

// A reader. ARGV: token, ttl ms, host, pid, user, command, the waiter's
// id ('': a try). {1, stored fence counter, server time in µs} when this
// node grants, {0, pttl} while a writer holds it here (a waiter joins the
// queue here, as a writer's does).
inline const Lazy acquire_shared{[] {
  return std::string(readers_prelude.text() + R"lua(
local me = ARGV[7] ~= '' and ('r:' .. ARGV[7]) or nil
if redis.call('EXISTS', KEYS[1]) == 1 then
  q_join(me)
  return {0, redis.call('PTTL', KEYS[1])}
end
if me then redis.call('ZREM', KEYS[9], me) end
local m = redis.sha1hex(ARGV[1])
redis.call('ZADD', KEYS[6], num(now + tonumber(ARGV[2])), m)
redis.call('HSET', KEYS[7], m .. ':host', ARGV[3], m .. ':pid', ARGV[4], m .. ':user', ARGV[5], m .. ':command',
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
  if redis.call('ZSCORE', KEYS[6], m) then redis.call('HSET', KEYS[7], m .. ':fence', ARGV[1]) end
end
return {1, string.format('%.0f', before)}
)lua";

// The writer's renew is lua::renew (scripts.hpp), a reader's
// server::shared::renew: {1, ttl applied}, or 0 if the token reads here no
// more (its lease ended: it is not brought back). The writer's release is
// server::release, a reader's server::shared::release: each wakes the head
// of this node's queue. A waiter that leaves runs server::leave.

// ARGV: token. Takes back a copy of a lock that did not reach a quorum:
// compare-and-delete without telling older dlocks' waiters, as nothing was
// released; the head of this node's queue is woken, though, since the
// node is free again (a waiter that lost a split vote here must not sleep
// until a lease that nobody holds runs out).
inline const Lazy take_back{[] {
  return std::string(server::prelude.text() + R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
q_wake()
return 1
)lua");
}};

// The same for a reader.
inline const Lazy take_back_shared{[] {
  return std::string(readers_prelude.text() + drop_member + "if removed == 1 then q_wake() end\nreturn removed\n");
}};

// ARGV: channel. Breaks the writer's lock and every reader's share here:
// {1} (waiters are told, and the head of the queue is woken), or nil when
// none was held.
inline const Lazy force_release{[] {
  return std::string(readers_prelude.text() + R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[6]) == 0 then return false end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[6], KEYS[7])
redis.call('PUBLISH', ARGV[1], 'released')
q_wake()
return {1}
)lua");
}};

// {pttl, holder fields, last fence, SHA-1 of the token or '', {{SHA-1 of
// a reader's token, pttl, its fields}, ...} of the live readers, waiters in
// this node's queue}: nodes that hold the same token can be counted
// without the token leaving the server.
inline constexpr const char *status = R"lua(
local token = redis.call('GET', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. string.format('%.0f', now), '+inf', 'WITHSCORES')
local readers = {}
for i = 1, #live, 2 do
  local m = live[i]
  local v = redis.call('HMGET', KEYS[7], m .. ':host', m .. ':pid', m .. ':user', m .. ':command', m .. ':since',
                       m .. ':fence')
  readers[#readers + 1] = {m, string.format('%.0f', tonumber(live[i + 1]) - now),
                           {'host', v[1] or '', 'pid', v[2] or '', 'user', v[3] or '', 'command', v[4] or '',
                            'since', v[5] or '', 'fence', v[6] or ''}}
end
return {redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('GET', KEYS[3]) or '',
        token and redis.sha1hex(token) or '', readers, redis.call('ZCARD', KEYS[8])}
)lua";

} // namespace dlock::backend::redis::lua::redlock
