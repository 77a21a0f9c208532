#include "backend/postgres/pg_session.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlock::backend::postgres {

Keepalive keepalive_for(Millis ttl) {
  long total = std::max<long>(2, static_cast<long>(std::chrono::ceil<std::chrono::seconds>(ttl).count()));
  Keepalive k{0, std::max<long>(1, total / 6), 3, ttl};
  k.idle = std::max<long>(1, total - k.interval * k.count);
  return k;
}

std::string startup_options(const Keepalive &k) {
  return fmt::format("-c tcp_keepalives_idle={} -c tcp_keepalives_interval={} -c tcp_keepalives_count={} -c "
                     "tcp_user_timeout={} -c statement_timeout=0 -c lock_timeout=0 -c "
                     "idle_in_transaction_session_timeout=0 -c exit_on_error=off",
                     k.idle, k.interval, k.count, k.user_timeout.count());
}

std::string session_settings(int server_version) {
  std::string columns;
  if (server_version >= 140000) columns += ", set_config('idle_session_timeout', '0', false)";
  if (server_version >= 170000) columns += ", set_config('transaction_timeout', '0', false)";
  return columns;
}

std::optional<Millis> server_ttl_for(Millis server_ttl, std::chrono::steady_clock::time_point promised_until,
                                     Millis ttl, std::chrono::steady_clock::time_point sent) {
  Millis promised = std::chrono::ceil<Millis>(promised_until - sent);
  Millis needed = std::max(ttl, promised);
  if (server_ttl >= needed && (server_ttl == ttl || promised > ttl)) return std::nullopt;
  return needed;
}

} // namespace dlock::backend::postgres
