#pragma once

#include "backend/backend.hpp"

#include <memory>

namespace dlock::backend::redis {

// One Redis server (redis://, rediss://, redis+unix://), or the master that
// Sentinel names (redis-sentinel://). The lock is `SET NX PX` of a random
// token inside a Lua script that also stores the holder and the fence;
// renew and release compare the token first. Waiters subscribe to the
// lock's release channel. T is the PX the server accepted.
std::unique_ptr<Backend> create_redis_backend(const BackendConfig &config);

} // namespace dlock::backend::redis
