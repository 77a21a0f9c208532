#pragma once

// The Lua scripts of the single-server Redis backend, on all ten keys of a
// lock (semaphore_command(); scripts.hpp has the keys they share with
// Redlock). Besides KEYS[1..3] (the exclusive lock, its holder record and
// the fence counter):
//
// KEYS[4] the semaphore (--limit N): a sorted set, one member per holder
// (the SHA-1 of its token, so the token never rests on the server), scored
// by the server's time in ms at which its lease ends; KEYS[5] its record
// (hash): `limit` = N, and per member M the fields M:host, M:pid, M:user,
// M:command, M:since, M:fence, M:ttl (its length) and M:slot (its number,
// 0..N-1, unique among the live members) and slot:K its holder (member)
// for slot K. KEYS[10] the free slots: a sorted set of the numbers below
// the highest taken that no live member has (scored by the number), so
// that a new holder takes the lowest without reading every member. The
// three expire with the last lease.
//
// KEYS[6] the readers of a shared lock (--shared; sorted set as the
// semaphore's) and KEYS[7] their record (M:host, ... M:ttl), both
// expiring with the last reader's lease. Its writer is the exclusive lock.
//
// KEYS[8] the queue of waiters, first come, first served for every mode: a
// sorted set of members KIND:ID scored by their place (1, 2, ...), KIND
// 'x' (exclusive), 'r' (reader) or 's'N (a semaphore of N), ID a waiter's
// random id (not its token). Each waiter listens on its own channel,
// KEYS[8] .. ':' .. ID. KEYS[9] the turns: a member of the queue whom the
// name admits now is woken on its channel ('turn') and has 2 s (its score
// here, server ms) to come and take it; a member whose turn ran out leaves
// the queue (its waiter is stopped or cut off, and joins again at the end
// when it comes back). The first member after those woken is told it is
// next ('next'): it tries again once their turns could have run out, so a
// stopped waiter holds the queue up for one turn. A waiter whose channel has no listener is gone
// (killed, or its connection lost) and leaves the queue when a wake-up or
// a probe ('ping') finds it so. So a release wakes the head of the queue
// (or as many as the slots it freed, or every reader in a row), not every
// waiter, and the server's work per hand-over does not grow with the
// number of waiters. Both keys end 90 s after the last waiter's move;
// waiters try again at least every 30 s.
//
// Every script starts with `prelude`.

#include "backend/redis/scripts.hpp"

#include <string>

namespace dlock::backend::redis::lua::server {

// What every script starts with: only functions, so that a script runs no
// command it does not need. clock() reads the server time once per script
// (`now` in ms, `micros`); every script that needs the time calls it
// first. Then lease_functions (scripts.hpp), live(set) (the members whose
// lease has not ended, counted without dropping the others: a script drops
// the expired members only of the set it writes), room(kind), the queue's
// q_*, wait_ms, held_again and new_fence. A script on a name nobody waits
// for touches the queue's keys with one command (its ZRANGE, ZRANK or
// ZCARD finds nothing).
inline const Lazy prelude{[] {
  return std::string(std::string(R"lua(
local micros, now
local function clock()
  if now then return end
  local t = redis.call('TIME')
  micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
  now = math.floor(micros / 1000)
end
)lua") + lease_functions +
                     R"lua(
local function live(set) return redis.call('ZCOUNT', set, '(' .. num(now), '+inf') end
-- How many more holders of KIND the name admits now, queue aside.
local function room(kind)
  if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
  local slots = live(KEYS[4])
  if kind == 'x' then return (slots == 0 and live(KEYS[6]) == 0) and 1 or 0 end
  if kind == 'r' then return slots == 0 and 1e9 or 0 end
  local n = tonumber(string.sub(kind, 2)) or 0
  if live(KEYS[6]) > 0 or (slots > 0 and redis.call('HGET', KEYS[5], 'limit') ~= num(n)) then return 0 end
  return math.max(n - slots, 0)
end
local function q_kind(m) return string.match(m, '^([^:]*):') end
local function q_tell(m, what) return redis.call('PUBLISH', KEYS[8] .. ':' .. string.match(m, ':(.*)$'), what) end
local function q_drop(m)
  redis.call('ZREM', KEYS[8], m)
  redis.call('ZREM', KEYS[9], m)
end
-- The members whose turn ran out leave the queue, once per script, before
-- it counts the members ahead of a waiter or wakes any: how many left.
local q_pruned = false
local function q_prune()
  if q_pruned then return 0 end
  q_pruned = true
  clock()
  local gone = redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', num(now))
  for _, m in ipairs(gone) do q_drop(m) end
  return #gone
end
local function q_keep()
  redis.call('PEXPIRE', KEYS[8], 90000)
  redis.call('PEXPIRE', KEYS[9], 90000)
end
-- Wakes the members at the head whom the name admits now (of the head's
-- kind, within its room) and have no turn yet, and tells the first after
-- them that it is next (it tries again once those turns could have run
-- out); drops the gone. It reads the queue a few members at a time: the
-- head and the one after it first, which is all a hand-over of an
-- exclusive lock needs.
local function q_wake()
  local want = 2
  local batch = redis.call('ZRANGE', KEYS[8], 0, want - 1)
  if #batch == 0 then return end
  if q_prune() > 0 then batch = redis.call('ZRANGE', KEYS[8], 0, want - 1) end
  local kind, r, i, b, woke = nil, 0, 0, 1, false
  while true do
    if b > #batch then
      if #batch < want then break end
      want = 16
      batch, b = redis.call('ZRANGE', KEYS[8], i, i + want - 1), 1
      if #batch == 0 then break end
    end
    local m = batch[b]
    b = b + 1
    if i == 0 then
      kind = q_kind(m)
      r = room(kind)
    end
    if q_kind(m) ~= kind or i >= r then
      if not woke or q_tell(m, 'next') > 0 then break end
      q_drop(m)
    elseif redis.call('ZSCORE', KEYS[9], m) then
      i = i + 1
    elseif q_tell(m, 'turn') > 0 then
      redis.call('ZADD', KEYS[9], num(now + 2000), m)
      i = i + 1
      woke = true
    else
      q_drop(m)
    end
  end
  if woke then q_keep() end
end
-- Whether the name, which has room R for holders of KIND queue aside,
-- admits one that waits as ME (nil: it does not wait, and comes after the
-- whole queue): the members ahead of it are of its kind and leave it room.
-- A member of another kind ahead is asked whether it is still there; a
-- gone one is dropped. Nobody ahead costs one command, and a waiter at the
-- head comes in then even if its own turn ran out (nobody else had the
-- name meanwhile).
local function q_admits(kind, me, r)
  if r == 0 then return false end
  local ahead = me and redis.call('ZRANK', KEYS[8], me)
  if ahead == 0 then return true end
  ahead = ahead or redis.call('ZCARD', KEYS[8])
  if ahead == 0 then return true end
  if q_prune() > 0 then ahead = me and redis.call('ZRANK', KEYS[8], me) or redis.call('ZCARD', KEYS[8]) end
  local i = 0
  while i < ahead do
    if i >= r then return false end
    local m = redis.call('ZRANGE', KEYS[8], i, i)[1]
    if q_kind(m) == kind then
      i = i + 1
    elseif q_tell(m, 'ping') == 0 then
      q_drop(m)
      ahead = ahead - 1
    else
      return false
    end
  end
  return ahead < r
end
-- ME joins the end of the queue (or keeps its place); a turn it could not
-- use ends (it is woken again when the name admits it).
local function q_join(me)
  if not me then return end
  redis.call('ZREM', KEYS[9], me)
  if not redis.call('ZSCORE', KEYS[8], me) then
    local last = redis.call('ZRANGE', KEYS[8], -1, -1, 'WITHSCORES')
    redis.call('ZADD', KEYS[8], num(#last > 0 and tonumber(last[2]) + 1 or 1), me)
  end
  q_keep()
end
-- ME leaves the queue (it holds, gave up or was refused); others may be
-- admitted now.
local function q_leave(me)
  if me then q_drop(me) end
  q_wake()
end
-- How long a waiter that is not woken sleeps before it tries again: until
-- the first lease or turn that stands in the way ends (expired members
-- that are still there do not count).
local function wait_ms()
  clock()
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 then return left end
  local first
  for _, set in ipairs({KEYS[4], KEYS[6], KEYS[9]}) do
    local head = redis.call('ZRANGEBYSCORE', set, '(' .. num(now), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if #head > 0 and (not first or tonumber(head[2]) < first) then first = tonumber(head[2]) end
  end
  return first and math.max(first - now, 1) or 50
end
-- The name is busy for ME: it joins the queue (or keeps its place), the
-- head is woken if the name admits it, and ME is told how long to sleep
-- unless woken.
local function q_busy(me)
  q_join(me)
  q_wake()
  return {0, wait_ms()}
end
-- ME is refused (the name is held in another mode): it leaves the queue
-- and gets REPLY.
local function q_refuse(me, reply)
  q_leave(me)
  return reply
end
-- A token that holds a member of SET already (a retry whose answer was
-- lost) has it again, with the lease `score` and the length ARGV[2]: its
-- fence and slot, or nil when it holds none. SET's expired members have
-- been dropped.
local function held_again(set, info, member, score)
  if not redis.call('ZSCORE', set, member) then return nil end
  redis.call('ZADD', set, score, member)
  redis.call('HSET', info, member .. ':ttl', ARGV[2])
  expire_set(set, info)
  return redis.call('HMGET', info, member .. ':fence', member .. ':slot')
end
local function new_fence()
  local fence = num(math.max((tonumber(redis.call('GET', KEYS[3])) or 0) + 1, micros))
  redis.call('SET', KEYS[3], fence)
  return fence
end
)lua");
}};

// The exclusive lock. ARGV: token, ttl ms, host, pid, user, command, the
// waiter's id ('' when it does not wait: a try). Returns {1, fence} when
// taken (again, with its fence, if this token already holds it: a retry
// whose answer was lost), {0, ms to sleep unless woken} when busy (a
// waiter joins the queue), {2, N} when live holders hold the name as a
// semaphore of N.
// fence = max(last fence + 1, server time in µs): it keeps growing when the
// counter is lost (FLUSHALL, restart without persistence).
inline const Lazy acquire{[] {
  return std::string(prelude.text() + R"lua(
clock()
local me = ARGV[7] ~= '' and ('x:' .. ARGV[7]) or nil
if live(KEYS[4]) > 0 then return q_refuse(me, {2, redis.call('HGET', KEYS[5], 'limit') or '0'}) end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  if me then q_drop(me) end
  return {1, redis.call('HGET', KEYS[2], 'fence') or '0'}
end
if holder or live(KEYS[6]) > 0 or not q_admits('x', me, 1) then return q_busy(me) end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if me then q_drop(me) end
local fence = new_fence()
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5], 'command', ARGV[6], 'since', num(now),
           'fence', fence, 'ttl', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {1, fence}
)lua");
}};

// ARGV: token, channel of older dlocks' waiters. 1 if released (the head
// of the queue is woken), 0 if not the owner.
inline const Lazy release{[] {
  return std::string(prelude.text() + R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', ARGV[2], 'released')
q_wake()
return 1
)lua");
}};

// ARGV: member (KIND:ID). A waiter that gives up leaves the queue.
inline const Lazy leave{[] {
  return std::string(prelude.text() + R"lua(
q_leave(ARGV[1])
return 1
)lua");
}};

// The body of the status script: {pttl, holder fields, last fence, N or
// '', {{pttl, holder fields and slot}, ...} of the live semaphore holders,
// {{pttl, holder fields}, ...} of the live readers, waiters in the queue};
// pttl is -2 when no exclusive lock is held.
inline constexpr const char *status_body = R"lua(
clock()
q_prune()
local function holders(set, info, slot)
  local out = {}
  local leases = redis.call('ZRANGEBYSCORE', set, '(' .. num(now), '+inf', 'WITHSCORES')
  for i = 1, #leases, 2 do
    local m = leases[i]
    local v = redis.call('HMGET', info, m .. ':host', m .. ':pid', m .. ':user', m .. ':command', m .. ':since',
                         m .. ':fence', m .. ':slot')
    local fields = {'host', v[1] or '', 'pid', v[2] or '', 'user', v[3] or '', 'command', v[4] or '', 'since',
                    v[5] or '', 'fence', v[6] or ''}
    if slot then
      fields[#fields + 1] = 'slot'
      fields[#fields + 1] = v[7] or ''
    end
    out[#out + 1] = {num(tonumber(leases[i + 1]) - now), fields}
  end
  return out
end
local result = {redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('GET', KEYS[3]) or '',
                redis.call('HGET', KEYS[5], 'limit') or '', holders(KEYS[4], KEYS[5], true),
                holders(KEYS[6], KEYS[7], false), redis.call('ZCARD', KEYS[8])}
)lua";
inline const Lazy status{[] { return std::string(prelude.text() + status_body + "return result\n"); }};

// ARGV: channel of older dlocks' waiters. Breaks the exclusive lock, every
// slot of a semaphore or every reader's share, whichever holds the name:
// the status script's reply from before, or nil when it was free.
inline const Lazy force_release{[] {
  return std::string(prelude.text() + status_body + R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 and live(KEYS[4]) == 0 and live(KEYS[6]) == 0 then
  return false
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[10])
redis.call('PUBLISH', ARGV[1], 'released')
q_wake()
return result
)lua");
}};

// Releasing a slot or a share (drop_member): 1 if released (the queue is
// woken), 0 if the token holds none.
inline constexpr const char *release_member = R"lua(
if removed == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 'released')
q_wake()
return 1
)lua";

} // namespace dlock::backend::redis::lua::server

// The counting semaphore (--limit N) on KEYS[4] and KEYS[5].
namespace dlock::backend::redis::lua::server::semaphore {

inline constexpr const char *on_set =
    "clock()\nlocal SET, INFO = KEYS[4], KEYS[5]\nfree_slots = KEYS[10]\ndrop_expired(SET, INFO)\n";

// The lowest slot number no live member has, for a semaphore with `held`
// live members (the expired ones dropped): the lowest of the free slots
// (KEYS[10]: the numbers below the highest that members gave back), or
// `held` when there are none, as every number below it is taken then. Not
// a scan of the members: a hand-over costs the same with 500 held as with
// one. Should the slot's owner in `slot:K` still hold (a member taken by a
// dlock that kept no free slots gave its number up unseen), the members
// are scanned once and the free slots written anew.
inline constexpr const char *lowest_free_slot = R"lua(
local function lowest_free_slot(held)
  if held == 0 then
    redis.call('DEL', KEYS[10])
    return 0
  end
  local slot = held
  local lowest = redis.call('ZRANGE', KEYS[10], 0, 0)[1]
  if lowest then
    redis.call('ZREM', KEYS[10], lowest)
    slot = tonumber(lowest)
  end
  local owner = redis.call('HGET', KEYS[5], 'slot:' .. num(slot))
  if not owner or not redis.call('ZSCORE', KEYS[4], owner) then return slot end
  local used, highest = {}, -1
  for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    local taken = tonumber(redis.call('HGET', KEYS[5], m .. ':slot'))
    if taken then
      used[taken] = true
      highest = math.max(highest, taken)
    end
  end
  redis.call('DEL', KEYS[10])
  slot = 0
  while used[slot] do slot = slot + 1 end
  for free = slot + 1, highest do
    if not used[free] then redis.call('ZADD', KEYS[10], free, num(free)) end
  end
  return slot
end
)lua";

// ARGV: token, ttl ms, N, host, pid, user, command, the waiter's id ('':
// a try). {1, fence, slot} when taken (again, with its fence and slot, if
// this token already holds one: a retry whose answer was lost), the lowest
// slot number no live member has; {0, ms to sleep unless woken} when all N
// slots are held or others come first; {2, N held} when live holders hold
// it with another N, {3, pttl} when it is held as an exclusive lock, {4,
// ''} while live readers hold it as a shared lock. The fence comes from
// the name's one counter, as the exclusive lock's.
inline const Lazy acquire{[] {
  return std::string(prelude.text() + on_set + lowest_free_slot + R"lua(
local kind = 's' .. ARGV[3]
local me = ARGV[8] ~= '' and (kind .. ':' .. ARGV[8]) or nil
if redis.call('EXISTS', KEYS[1]) == 1 then return q_refuse(me, {3, redis.call('PTTL', KEYS[1])}) end
if live(KEYS[6]) > 0 then return q_refuse(me, {4, ''}) end
local limit = redis.call('HGET', KEYS[5], 'limit')
local slots = redis.call('ZCARD', KEYS[4])
if slots > 0 and limit and limit ~= ARGV[3] then return q_refuse(me, {2, limit}) end
local member = redis.sha1hex(ARGV[1])
local score = num(now + tonumber(ARGV[2]))
local held = held_again(KEYS[4], KEYS[5], member, score)
if held then return {1, held[1] or '0', held[2] or ''} end
local free = (slots > 0 and limit ~= ARGV[3]) and 0 or math.max((tonumber(ARGV[3]) or 0) - slots, 0)
if not q_admits(kind, me, free) then return q_busy(me) end
if me then q_drop(me) end
local slot = lowest_free_slot(slots)
local fence = new_fence()
redis.call('ZADD', KEYS[4], score, member)
redis.call('HSET', KEYS[5], 'limit', ARGV[3], member .. ':host', ARGV[4], member .. ':pid', ARGV[5],
           member .. ':user', ARGV[6], member .. ':command', ARGV[7], member .. ':since', num(now),
           member .. ':fence', fence, member .. ':ttl', ARGV[2], member .. ':slot', num(slot), 'slot:' .. num(slot),
           member)
expire_set(KEYS[4], KEYS[5])
return {1, fence, num(slot)}
)lua");
}};

inline const Lazy renew{[] { return std::string(prelude.text() + on_set + renew_member); }};
inline const Lazy release{[] { return std::string(prelude.text() + on_set + drop_member + release_member); }};

} // namespace dlock::backend::redis::lua::server::semaphore

// The readers of a shared lock (--shared) on KEYS[6] and KEYS[7]; the
// writer is the exclusive lock. A writer in the queue keeps the readers
// who come after it out: writer preference is the queue's order.
namespace dlock::backend::redis::lua::server::shared {

inline constexpr const char *on_set = "clock()\nlocal SET, INFO = KEYS[6], KEYS[7]\ndrop_expired(SET, INFO)\n";

// ARGV: token, ttl ms, host, pid, user, command, the waiter's id ('': a
// try). {1, fence} when taken (again, with its fence, if this token
// already reads: a retry whose answer was lost); {0, ms to sleep unless
// woken} while a writer holds the name or a waiter of another kind comes
// first; {2, N} when live holders hold it as a semaphore of N. The fence
// comes from the name's one counter, as a writer's.
inline const Lazy acquire{[] {
  return std::string(prelude.text() + on_set + R"lua(
local me = ARGV[7] ~= '' and ('r:' .. ARGV[7]) or nil
if live(KEYS[4]) > 0 then return q_refuse(me, {2, redis.call('HGET', KEYS[5], 'limit') or '0'}) end
local member = redis.sha1hex(ARGV[1])
local score = num(now + tonumber(ARGV[2]))
local held = held_again(KEYS[6], KEYS[7], member, score)
if held then return {1, held[1] or '0'} end
if not q_admits('r', me, redis.call('EXISTS', KEYS[1]) == 1 and 0 or 1e9) then return q_busy(me) end
if me then q_drop(me) end
local fence = new_fence()
redis.call('ZADD', KEYS[6], score, member)
redis.call('HSET', KEYS[7], member .. ':host', ARGV[3], member .. ':pid', ARGV[4], member .. ':user', ARGV[5],
           member .. ':command', ARGV[6], member .. ':since', num(now), member .. ':fence', fence, member .. ':ttl',
           ARGV[2])
expire_set(KEYS[6], KEYS[7])
return {1, fence}
)lua");
}};

inline const Lazy renew{[] { return std::string(prelude.text() + on_set + renew_member); }};
inline const Lazy release{[] { return std::string(prelude.text() + on_set + drop_member + release_member); }};

} // namespace dlock::backend::redis::lua::server::shared
