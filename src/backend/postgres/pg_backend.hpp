#pragma once

#include "backend/backend.hpp"

#include <memory>

namespace dlock::backend::postgres {

// postgres:// and postgresql:// (any libpq URI; PG* variables and .pgpass
// honoured): a session-level advisory lock on a 64-bit key derived from
// namespace and name, one server session per held lock. Waiters block
// server-side (pg_advisory_lock under lock_timeout). T is --ttl: renewals
// are round trips on the lock's session, and the server's TCP keepalives
// are set so that it frees a vanished client's lock after about T, never
// sooner. The fence is txid_current() at acquisition. libpq is loaded with
// dlopen on first use.
std::unique_ptr<Backend> create_postgres_backend(const BackendConfig &config);

} // namespace dlock::backend::postgres
