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

#include <string>

namespace dlock::backend::redis::lua {

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

} // namespace dlock::backend::redis::lua
