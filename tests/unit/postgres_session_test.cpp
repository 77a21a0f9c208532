#include "backend/postgres/pg_session.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

using dlock::Millis;
using namespace dlock::backend::postgres;
using Clock = std::chrono::steady_clock;

TEST_CASE("the session's keepalives never give up on a silent client before T", "[postgres]") {
  Keepalive k = keepalive_for(Millis(30'000));
  CHECK(k.idle == 15);
  CHECK(k.interval == 5);
  CHECK(k.count == 3);
  CHECK(k.user_timeout == Millis(30'000));
  for (long ms : {1L, 999L, 1000L, 1001L, 1500L, 2000L, 2999L, 3000L, 5500L, 12'000L, 59'999L, 60'000L, 3'600'000L}) {
    Keepalive each = keepalive_for(Millis(ms));
    INFO("ttl " << ms << " ms");
    CHECK(each.idle >= 1);
    CHECK(each.interval >= 1);
    CHECK((each.idle + each.count * each.interval) * 1000 >= ms);
    CHECK(each.user_timeout == Millis(ms));
  }
}

TEST_CASE("the startup options turn off what could end the session before T", "[postgres]") {
  std::string options = startup_options(keepalive_for(Millis(12'000)));
  for (const char *setting :
       {"-c tcp_keepalives_idle=6 ", "-c tcp_keepalives_interval=2 ", "-c tcp_keepalives_count=3 ",
        "-c tcp_user_timeout=12000 ", "-c statement_timeout=0 ", "-c lock_timeout=0 ",
        "-c idle_in_transaction_session_timeout=0 ", "-c exit_on_error=off"}) {
    INFO(setting);
    CHECK(options.find(setting) != std::string::npos);
  }
  // What an older server does not know would refuse the connection.
  CHECK(options.find("idle_session_timeout") == std::string::npos);
  CHECK(options.find("-c transaction_timeout") == std::string::npos);
}

TEST_CASE("newer session settings are set only on servers that know them", "[postgres]") {
  CHECK(session_settings(120'005).empty());
  CHECK(session_settings(130'012).empty());
  CHECK(session_settings(140'000) == ", set_config('idle_session_timeout', '0', false)");
  CHECK(session_settings(150'004) == ", set_config('idle_session_timeout', '0', false)");
  CHECK(session_settings(170'002) ==
        ", set_config('idle_session_timeout', '0', false), set_config('transaction_timeout', '0', false)");
}

TEST_CASE("a renewal sets the server's keepalives for the T it asks for, never below an older promise", "[postgres]") {
  auto t0 = Clock::now();
  // Acquired for 12 s: renewals for 12 s change nothing.
  CHECK_FALSE(server_ttl_for(Millis(12'000), t0 + Millis(12'000), Millis(12'000), t0 + Millis(4'000)));
  // renew --ttl 60s: set at once.
  CHECK(server_ttl_for(Millis(12'000), t0 + Millis(12'000), Millis(60'000), t0 + Millis(4'000)) == Millis(60'000));
  // renew --ttl 3s after 60 s were promised at t0: the server keeps what is
  // left of the promise until it has run out...
  auto promised = t0 + Millis(60'000);
  CHECK_FALSE(server_ttl_for(Millis(60'000), promised, Millis(3'000), t0 + Millis(10'000)));
  CHECK_FALSE(server_ttl_for(Millis(60'000), promised, Millis(3'000), t0 + Millis(56'999)));
  // ...then takes the shorter T.
  CHECK(server_ttl_for(Millis(60'000), promised, Millis(3'000), t0 + Millis(57'000)) == Millis(3'000));
  CHECK(server_ttl_for(Millis(60'000), promised, Millis(3'000), t0 + Millis(70'000)) == Millis(3'000));
  CHECK_FALSE(server_ttl_for(Millis(3'000), t0 + Millis(73'000), Millis(3'000), t0 + Millis(71'000)));
  // A change that went unanswered (0: either value may be in force) is
  // made again, covering the old promise.
  CHECK(server_ttl_for(Millis(0), promised, Millis(3'000), t0 + Millis(10'000)) == Millis(50'000));
  CHECK(server_ttl_for(Millis(0), t0 + Millis(2'000), Millis(3'000), t0 + Millis(1'000)) == Millis(3'000));
  // A server T below what is promised is raised to it.
  CHECK(server_ttl_for(Millis(20'000), promised, Millis(3'000), t0 + Millis(10'000)) == Millis(50'000));
}
