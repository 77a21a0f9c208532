#pragma once

// The Lua scripts of the Redis backend. Each runs atomically on the server.
// Keys of one lock share the hash tag {NS:NAME}: KEYS[1] the lock (token,
// PX ttl), KEYS[2] the holder record (hash, same expiry; its field `ttl` is
// the lock's length in ms, what a renewal without one renews it for),
// KEYS[3] the fence counter (no expiry). Numbers go back to Redis as
// integer strings: Lua's own conversion would print 1.7e+15.
//
// The single-server backend passes five more keys (semaphore_command()):
// KEYS[4] the semaphore's sorted set, one member per holder (the SHA-1 of
// its token, so the token never rests on the server), scored by the
// server's time in ms at which its lease ends; KEYS[5] the semaphore's
// record (hash): `limit` = N, and per member M the fields M:host, M:pid,
// M:user, M:command, M:since, M:fence, M:ttl (its length) and M:slot (its
// number, 0..N-1, unique among the live members). Both expire with the
// last lease of the set. KEYS[6] the readers of a shared lock (sorted set,
// as the semaphore's: SHA-1 of each reader's token, scored by the end of
// its lease in server ms) and KEYS[7] their record (M:host, M:pid, M:user,
// M:command, M:since, M:fence, M:ttl), both expiring with the last lease;
// KEYS[8] the writers waiting for the name (sorted set: SHA-1 of each
// waiting exclusive acquirer's token, scored by the end of its short
// waiting lease): while it has a live member no new reader gets in.

#include <string>

namespace dlock::backend::redis::lua {

// What the scripts that see readers start with: `s_now` (server time in
// ms), `s_micros`, the expired readers (and their fields) and expired
// waiting writers dropped, expire_readers() to make KEYS[6] and KEYS[7] end
// with the last reader's lease, and wait_as_writer(ms) to enter (or renew)
// the token ARGV[1] among the waiting writers for `ms`.
inline constexpr const char *shared_prelude = R"lua(
local st = redis.call('TIME')
local s_micros = tonumber(st[1]) * 1000000 + tonumber(st[2])
local s_now = math.floor(s_micros / 1000)
local function s_num(x) return string.format('%.0f', x) end
local function forget_reader(m)
  redis.call('HDEL', KEYS[7], m .. ':host', m .. ':pid', m .. ':user', m .. ':command', m .. ':since', m .. ':fence',
             m .. ':ttl')
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', s_num(s_now))
for _, m in ipairs(gone) do forget_reader(m) end
if #gone > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', s_num(s_now)) end
redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', s_num(s_now))
local function expire_set(set, also)
  local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', set, also or set)
    return
  end
  local left = s_num(math.max(tonumber(last[2]) - s_now, 1))
  redis.call('PEXPIRE', set, left)
  if also then redis.call('PEXPIRE', also, left) end
end
local function expire_readers() expire_set(KEYS[6], KEYS[7]) end
local function wait_as_writer(ms)
  if ms <= 0 then return end
  redis.call('ZADD', KEYS[8], s_num(s_now + ms), redis.sha1hex(ARGV[1]))
  expire_set(KEYS[8])
end
)lua";

// ARGV: token, ttl ms, host, pid, user, command, waiting ms (0: not
// waiting; otherwise a busy answer enters the token among the waiting
// writers for that long, and taking the lock takes it out).
// Returns {1, fence} when taken, {0, pttl of the holder's lock} when busy,
// {2, N} when live holders hold the name as a semaphore of N; busy too
// while live readers hold it ({0, ms until the first reader's lease ends}).
// fence = max(last fence + 1, server time in µs): it keeps growing when the
// counter is lost (FLUSHALL, restart without persistence).
inline const std::string acquire = std::string(shared_prelude) + R"lua(
if redis.call('ZCOUNT', KEYS[4], '(' .. s_num(s_now), '+inf') > 0 then
  return {2, redis.call('HGET', KEYS[5], 'limit') or '0'}
end
local waiting = tonumber(ARGV[7] or '0') or 0
local first = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
if #first > 0 then
  wait_as_writer(waiting)
  return {0, math.max(tonumber(first[2]) - s_now, 1)}
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  wait_as_writer(waiting)
  return {0, redis.call('PTTL', KEYS[1])}
end
redis.call('ZREM', KEYS[8], redis.sha1hex(ARGV[1]))
local now = redis.call('TIME')
local micros = tonumber(now[1]) * 1000000 + tonumber(now[2])
local fence = math.max((tonumber(redis.call('GET', KEYS[3])) or 0) + 1, micros)
fence = string.format('%.0f', fence)
redis.call('SET', KEYS[3], fence)
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5], 'command', ARGV[6],
           'since', string.format('%.0f', math.floor(micros / 1000)), 'fence', fence, 'ttl', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {1, fence}
)lua";

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

// ARGV: token, channel. 1 if released (waiters are told), 0 if not the owner.
inline constexpr const char *release = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', ARGV[2], 'released')
return 1
)lua";

// ARGV: channel. Breaks the lock whoever holds it: {pttl, holder fields}, or
// nil when free.
inline constexpr const char *force_release = R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local result = {redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[2])}
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', ARGV[1], 'released')
return result
)lua";

// One consistent view: {pttl, holder fields, last fence}; pttl is -2 when
// the lock is free. With semaphore_command() also the semaphore's: {...,
// N or '', {{pttl, holder fields and slot}, ...}} of its live holders.
inline constexpr const char *status_body = R"lua(
local result = {redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('GET', KEYS[3]) or ''}
if KEYS[4] then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local live = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. string.format('%.0f', now), '+inf', 'WITHSCORES')
  local holders = {}
  for i = 1, #live, 2 do
    local m = live[i]
    local v = redis.call('HMGET', KEYS[5], m .. ':host', m .. ':pid', m .. ':user', m .. ':command', m .. ':since',
                         m .. ':fence', m .. ':slot')
    holders[#holders + 1] = {string.format('%.0f', tonumber(live[i + 1]) - now),
                             {'host', v[1] or '', 'pid', v[2] or '', 'user', v[3] or '', 'command', v[4] or '',
                              'since', v[5] or '', 'fence', v[6] or '', 'slot', v[7] or ''}}
  end
  result[4] = redis.call('HGET', KEYS[5], 'limit') or ''
  result[5] = holders
end
if KEYS[6] then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local live = redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. string.format('%.0f', now), '+inf', 'WITHSCORES')
  local readers = {}
  for i = 1, #live, 2 do
    local m = live[i]
    local v = redis.call('HMGET', KEYS[7], m .. ':host', m .. ':pid', m .. ':user', m .. ':command', m .. ':since',
                         m .. ':fence')
    readers[#readers + 1] = {string.format('%.0f', tonumber(live[i + 1]) - now),
                             {'host', v[1] or '', 'pid', v[2] or '', 'user', v[3] or '', 'command', v[4] or '',
                              'since', v[5] or '', 'fence', v[6] or ''}}
  end
  result[6] = readers
end
)lua";
inline const std::string status = std::string(status_body) + "return result\n";

} // namespace dlock::backend::redis::lua

// The counting semaphore of the single-server backend, on all five keys
// (semaphore_command()). Each script first drops the members whose lease
// has ended (and their fields), so that an expired slot is free at once.
namespace dlock::backend::redis::lua::semaphore {

// What every semaphore script starts with: `now` (server time in ms),
// `micros`, the expired members dropped, and expire_all() to make both
// keys end with the last lease of the set (or go when it is empty).
inline constexpr const char *prelude = R"lua(
local t = redis.call('TIME')
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(micros / 1000)
local function num(x) return string.format('%.0f', x) end
local function forget(m)
  redis.call('HDEL', KEYS[5], m .. ':host', m .. ':pid', m .. ':user', m .. ':command', m .. ':since', m .. ':fence',
             m .. ':ttl', m .. ':slot')
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', num(now))
for _, m in ipairs(expired) do forget(m) end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', num(now)) end
local function expire_all()
  local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', KEYS[4], KEYS[5])
    return
  end
  local left = num(math.max(tonumber(last[2]) - now, 1))
  redis.call('PEXPIRE', KEYS[4], left)
  redis.call('PEXPIRE', KEYS[5], left)
end
)lua";

// ARGV: token, ttl ms, N, host, pid, user, command. {1, fence, slot} when
// taken (again, with its fence and slot, if this token already holds one:
// a retry whose answer was lost), the lowest slot number no live member
// has; {0, ms until the first lease ends} when all N
// slots are held, {2, N held} when live holders hold it with another N,
// {3, pttl} when it is held as an exclusive lock, {4, ''} while live
// readers hold it as a shared lock. The fence comes from the
// name's one counter, as the exclusive lock's.
inline const std::string acquire = std::string(prelude) + R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return {3, redis.call('PTTL', KEYS[1])} end
if redis.call('ZCOUNT', KEYS[6], '(' .. num(now), '+inf') > 0 then return {4, ''} end
local count = redis.call('ZCARD', KEYS[4])
local limit = redis.call('HGET', KEYS[5], 'limit')
if count > 0 and limit and limit ~= ARGV[3] then return {2, limit} end
local member = redis.sha1hex(ARGV[1])
local score = num(now + tonumber(ARGV[2]))
if redis.call('ZSCORE', KEYS[4], member) then
  redis.call('ZADD', KEYS[4], score, member)
  redis.call('HSET', KEYS[5], member .. ':ttl', ARGV[2])
  expire_all()
  local held = redis.call('HMGET', KEYS[5], member .. ':fence', member .. ':slot')
  return {1, held[1] or '0', held[2] or ''}
end
if count >= tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  return {0, math.max(tonumber(first[2]) - now, 1)}
end
local used = {}
for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  local taken = tonumber(redis.call('HGET', KEYS[5], m .. ':slot'))
  if taken then used[taken] = true end
end
local slot = 0
while used[slot] do slot = slot + 1 end
local fence = num(math.max((tonumber(redis.call('GET', KEYS[3])) or 0) + 1, micros))
redis.call('SET', KEYS[3], fence)
redis.call('ZADD', KEYS[4], score, member)
redis.call('HSET', KEYS[5], 'limit', ARGV[3], member .. ':host', ARGV[4], member .. ':pid', ARGV[5],
           member .. ':user', ARGV[6], member .. ':command', ARGV[7], member .. ':since', num(now),
           member .. ':fence', fence, member .. ':ttl', ARGV[2], member .. ':slot', num(slot))
expire_all()
return {1, fence, num(slot)}
)lua";

// ARGV: token, ttl ms (0: the slot's own length), fallback ms (a slot
// without a recorded length). {1, ttl applied} if
// renewed, 0 if the token holds no slot (any more). As the exclusive
// lock's renew script, a ttl given becomes the slot's length.
inline const std::string renew = std::string(prelude) + R"lua(
local member = redis.sha1hex(ARGV[1])
if not redis.call('ZSCORE', KEYS[4], member) then
  expire_all()
  return 0
end
local ttl = tonumber(ARGV[2])
if ttl == 0 then
  ttl = tonumber(redis.call('HGET', KEYS[5], member .. ':ttl'))
  if not ttl or ttl < 1 then ttl = tonumber(ARGV[3]) end
else
  redis.call('HSET', KEYS[5], member .. ':ttl', ARGV[2])
end
redis.call('ZADD', KEYS[4], num(now + ttl), member)
expire_all()
return {1, num(ttl)}
)lua";

// ARGV: token, channel. 1 if released (waiters are told), 0 if the token
// holds no slot.
inline const std::string release = std::string(prelude) + R"lua(
local member = redis.sha1hex(ARGV[1])
local removed = redis.call('ZREM', KEYS[4], member)
if removed == 1 then forget(member) end
expire_all()
if removed == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 'released')
return 1
)lua";

// ARGV: channel. Breaks every slot: the status script's reply from before,
// or nil when no slot was held.
inline const std::string force_release = std::string(prelude) + R"lua(
if redis.call('ZCARD', KEYS[4]) == 0 then return false end
)lua" + status_body + R"lua(
redis.call('DEL', KEYS[4], KEYS[5])
redis.call('PUBLISH', ARGV[1], 'released')
return result
)lua";

} // namespace dlock::backend::redis::lua::semaphore

// The readers of a shared lock (--shared) on the single-server backend, on
// all eight keys (semaphore_command()); the writer is the exclusive lock.
namespace dlock::backend::redis::lua::shared {

// ARGV: token, ttl ms, host, pid, user, command. {1, fence} when taken
// (again, with its fence, if this token already reads: a retry whose
// answer was lost); {0, ms to wait} while a writer holds the name or waits
// for it; {2, N} when live holders hold it as a semaphore of N. The fence
// comes from the name's one counter, as a writer's.
inline const std::string acquire = std::string(shared_prelude) + R"lua(
if redis.call('ZCOUNT', KEYS[4], '(' .. s_num(s_now), '+inf') > 0 then
  return {2, redis.call('HGET', KEYS[5], 'limit') or '0'}
end
local member = redis.sha1hex(ARGV[1])
local score = s_num(s_now + tonumber(ARGV[2]))
if redis.call('ZSCORE', KEYS[6], member) then
  redis.call('ZADD', KEYS[6], score, member)
  redis.call('HSET', KEYS[7], member .. ':ttl', ARGV[2])
  expire_readers()
  return {1, redis.call('HGET', KEYS[7], member .. ':fence') or '0'}
end
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, redis.call('PTTL', KEYS[1])} end
local writer = redis.call('ZRANGE', KEYS[8], 0, 0, 'WITHSCORES')
if #writer > 0 then return {0, math.max(tonumber(writer[2]) - s_now, 1)} end
local fence = s_num(math.max((tonumber(redis.call('GET', KEYS[3])) or 0) + 1, s_micros))
redis.call('SET', KEYS[3], fence)
redis.call('ZADD', KEYS[6], score, member)
redis.call('HSET', KEYS[7], member .. ':host', ARGV[3], member .. ':pid', ARGV[4], member .. ':user', ARGV[5],
           member .. ':command', ARGV[6], member .. ':since', s_num(s_now), member .. ':fence', fence,
           member .. ':ttl', ARGV[2])
expire_readers()
return {1, fence}
)lua";

// ARGV: token, ttl ms (0: the reader's own length), fallback ms. {1, ttl
// applied} if renewed, 0 if the token reads no more. A ttl given becomes
// the reader's length.
inline const std::string renew = std::string(shared_prelude) + R"lua(
local member = redis.sha1hex(ARGV[1])
if not redis.call('ZSCORE', KEYS[6], member) then
  expire_readers()
  return 0
end
local ttl = tonumber(ARGV[2])
if ttl == 0 then
  ttl = tonumber(redis.call('HGET', KEYS[7], member .. ':ttl'))
  if not ttl or ttl < 1 then ttl = tonumber(ARGV[3]) end
else
  redis.call('HSET', KEYS[7], member .. ':ttl', ARGV[2])
end
redis.call('ZADD', KEYS[6], s_num(s_now + ttl), member)
expire_readers()
return {1, s_num(ttl)}
)lua";

// ARGV: token, channel. 1 if released (waiters are told), 0 if the token
// does not read.
inline const std::string release = std::string(shared_prelude) + R"lua(
local member = redis.sha1hex(ARGV[1])
local removed = redis.call('ZREM', KEYS[6], member)
if removed == 1 then forget_reader(member) end
expire_readers()
if removed == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 'released')
return 1
)lua";

// ARGV: token. A writer that gave up waiting leaves the waiting writers.
inline const std::string stop_waiting = R"lua(
redis.call('ZREM', KEYS[8], redis.sha1hex(ARGV[1]))
return 1
)lua";

// ARGV: channel. Breaks every reader's share: the status script's reply
// from before, or nil when no reader held it.
inline const std::string force_release = std::string(shared_prelude) + R"lua(
if redis.call('ZCARD', KEYS[6]) == 0 then return false end
)lua" + status_body + R"lua(
redis.call('DEL', KEYS[6], KEYS[7])
redis.call('PUBLISH', ARGV[1], 'released')
return result
)lua";

} // namespace dlock::backend::redis::lua::shared
