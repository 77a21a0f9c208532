#include "core/config.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/exit_code.hpp"
#include "core/name.hpp"
#include "core/url.hpp"

#include <catch2/catch.hpp>

using namespace dlock;
using namespace std::chrono_literals;

TEST_CASE("durations accept the documented forms") {
  CHECK(parse_duration("250ms", "--ttl") == 250ms);
  CHECK(parse_duration("30s", "--ttl") == 30s);
  CHECK(parse_duration("5m", "--ttl") == 5min);
  CHECK(parse_duration("2h", "--ttl") == 2h);
  CHECK(parse_duration("1h30m", "--ttl") == 90min);
  CHECK(parse_duration("1.5s", "--ttl") == 1500ms);
  CHECK(parse_duration("10", "--ttl") == 10s);
  CHECK(parse_duration("0", "--wait") == 0ms);
  CHECK(parse_wait("forever", "--wait") == std::nullopt);
  CHECK(parse_wait("2s", "--wait") == std::optional<Millis>(2s));
}

TEST_CASE("bad durations are usage errors naming the option") {
  for (const char *bad : {"", "5x", "-1", "1h30", "s", "1..5s", "forever", "1 s", "ms", "99999999999h"}) {
    INFO(bad);
    try {
      parse_duration(bad, "--ttl");
      FAIL("accepted");
    } catch (const Error &failure) {
      CHECK(failure.code() == ExitCode::usage);
      CHECK(std::string(failure.what()).find("--ttl") != std::string::npos);
    }
  }
}

TEST_CASE("durations render back in a readable form") {
  CHECK(format_duration(250ms) == "250ms");
  CHECK(format_duration(1500ms) == "1.5s");
  CHECK(format_duration(192s) == "3m12s");
  CHECK(format_duration(90min) == "1h30m");
  CHECK(parse_duration(format_duration(192s), "x") == 192s);
}

TEST_CASE("names allow letters, digits and . _ - : / @ + =") {
  CHECK_NOTHROW(validate_name("nightly-report"));
  CHECK_NOTHROW(validate_name("a.b_c-d:e/f@g+h=i"));
  CHECK_NOTHROW(validate_name(std::string(200, 'x')));
  CHECK_THROWS_AS(validate_name(""), UsageError);
  CHECK_THROWS_AS(validate_name(std::string(201, 'x')), UsageError);
}

TEST_CASE("names and namespaces made only of dots are refused, dots among other characters are fine") {
  for (const char *dots : {".", "..", "...", "...................."}) {
    CHECK_THROWS_AS(validate_name(dots), UsageError);
    CHECK_THROWS_AS(validate_name(dots, "namespace"), UsageError);
  }
  try {
    validate_name("..", "namespace");
    FAIL("accepted");
  } catch (const UsageError &failure) {
    CHECK(std::string(failure.what()) ==
          "namespace '..' is made only of dots: such names are refused on every backend");
  }
  CHECK_NOTHROW(validate_name(".hidden"));
  CHECK_NOTHROW(validate_name("a.."));
  CHECK_NOTHROW(validate_name("../x"));
  CHECK_NOTHROW(validate_name("x.lock", "namespace"));
  // A list prefix only selects names; "." lists the names that start with one.
  CHECK_NOTHROW(validate_name(".", "prefix"));
}

TEST_CASE("a bad name character is named in the message") {
  try {
    validate_name("a b");
    FAIL("accepted");
  } catch (const UsageError &failure) {
    CHECK(std::string(failure.what()).find("' ' (space)") != std::string::npos);
  }
  try {
    validate_name("a\nb");
    FAIL("accepted");
  } catch (const UsageError &failure) {
    std::string message = failure.what();
    CHECK(message.find("0x0a") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("URLs keep hosts, path and query, and never print the password") {
  Url url = parse_url("redis://alice:s3cret@10.0.0.1:6379,10.0.0.2/2?cacert=/etc/ca.pem");
  CHECK(url.scheme == "redis");
  CHECK(url.user == "alice");
  CHECK(url.password == "s3cret");
  CHECK(url.hosts == std::vector<std::string>{"10.0.0.1:6379", "10.0.0.2"});
  CHECK(url.path == "/2");
  CHECK(url.query.at("cacert") == "/etc/ca.pem");
  CHECK(url.redacted().find("s3cret") == std::string::npos);
  CHECK(url.redacted() == "redis://alice:***@10.0.0.1:6379,10.0.0.2/2?cacert=/etc/ca.pem");
  CHECK(url.without_credentials() == "redis://10.0.0.1:6379,10.0.0.2/2?cacert=/etc/ca.pem");
  CHECK(parse_url("postgres://u@h/db?password=hunter2").redacted().find("hunter2") == std::string::npos);
}

TEST_CASE("file URLs and malformed URLs") {
  CHECK(parse_url("file:").scheme == "file");
  CHECK(parse_url("file:///var/lock/app").path == "/var/lock/app");
  CHECK_THROWS_AS(parse_url("nocolon"), ConfigError);
  CHECK_THROWS_AS(parse_url("redis://a:%zz@h"), ConfigError);
  CHECK_THROWS_AS(parse_url("redis://h1,,h2"), ConfigError);
}

TEST_CASE("config files take key = value lines and reject unknown keys") {
  ConfigFile config = parse_config("# comment\n\nbackend = file:///tmp/x\n ttl=10s \nnamespace = \"ops\"\n", "c");
  CHECK(config.get("backend") == "file:///tmp/x");
  CHECK(config.get("ttl") == "10s");
  CHECK(config.get("namespace") == "ops");
  CHECK_FALSE(config.get("wait"));
  CHECK_THROWS_AS(parse_config("colour = blue\n", "c"), ConfigError);
  CHECK_THROWS_AS(parse_config("just words\n", "c"), ConfigError);
  CHECK_THROWS_AS(load_config(std::string("/nonexistent/dlock.conf")), ConfigError);
}

TEST_CASE("config files: a comment may follow a value, a quoted value keeps its '#'") {
  ConfigFile config = parse_config("backend = file:///srv/locks # prod\nnamespace = \"a#b\"  # quoted\n"
                                   "ttl = 10s#not a comment\nwait = '5s'\n",
                                   "c");
  CHECK(config.get("backend") == "file:///srv/locks");
  CHECK(config.get("namespace") == "a#b");
  CHECK(config.get("ttl") == "10s#not a comment");
  CHECK(config.get("wait") == "5s");
  CHECK(config.where("wait") == "c:4");
}

TEST_CASE("config file errors name FILE:LINE") {
  auto message_of = [](const std::string &text) {
    try {
      parse_config(text, "/etc/dlock/config");
    } catch (const ConfigError &error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  CHECK(message_of("\n\nttl = 1s\nttl = 2s\n") ==
        "config file /etc/dlock/config:4: ttl is set twice (first on line 3)");
  CHECK(message_of("# x\nbakend = file:\n") ==
        "config file /etc/dlock/config:2: unknown key 'bakend' (did you mean 'backend'?)");
  CHECK(message_of("backend =   # nothing\n") == "config file /etc/dlock/config:1: backend has no value");
  CHECK(message_of("namespace = \"open\n") == "config file /etc/dlock/config:1: unterminated quote");
  CHECK(message_of("namespace = \"a\" b\n") == "config file /etc/dlock/config:1: text after the closing quote: 'b'");
  CHECK(message_of("words\n") == "config file /etc/dlock/config:1: expected 'key = value'");
}

TEST_CASE("exit codes mirror the spec's table") {
  CHECK(to_int(ExitCode::not_held) == 3);
  CHECK(to_int(ExitCode::usage) == 64);
  CHECK(to_int(ExitCode::unavailable) == 69);
  CHECK(to_int(ExitCode::internal) == 70);
  CHECK(to_int(ExitCode::busy) == 75);
  CHECK(to_int(ExitCode::lost) == 76);
  CHECK(to_int(ExitCode::auth) == 77);
  CHECK(to_int(ExitCode::config) == 78);
  CHECK(to_int(ExitCode::max_runtime) == 124);
  CHECK(to_int(ExitCode::cannot_execute) == 126);
  CHECK(to_int(ExitCode::not_found) == 127);
}
