#include "core/error.hpp"
#include "runner/event_log.hpp"
#include "runner/metrics_file.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <regex>

using namespace dlock;
using namespace dlock::runner;

namespace {

const EventOrigin k_origin{"dlock", "redis://locks:6379", "web1", 4242};

RunEvent released_event() {
  RunEvent event;
  event.kind = EventKind::released;
  event.name = "nightly-report";
  event.at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796324118123));
  event.fence = 42;
  event.wait = Millis(3);
  event.duration = Millis(1500);
  event.exit_status = 0;
  event.job_status = 0;
  event.renewals = 2;
  return event;
}

} // namespace

TEST_CASE("an event's fields come in one order, only those set, never a token") {
  RunEvent busy;
  busy.kind = EventKind::busy;
  busy.name = "x";
  busy.wait = Millis(0);
  busy.exit_status = 75;
  EventFields fields = event_fields(busy, k_origin);
  std::vector<std::string> keys;
  for (const auto &field : fields)
    keys.push_back(field.key);
  CHECK(keys ==
        std::vector<std::string>{"event", "name", "wait_ms", "exit_status", "namespace", "backend", "host", "pid"});
  CHECK(fields[0].value == "busy");
}

TEST_CASE("logfmt quotes values with blanks, quotes or newlines") {
  RunEvent lost;
  lost.kind = EventKind::lost;
  lost.name = "x";
  lost.cause = "the backend said \"no\"\nat once";
  std::string line = logfmt_record(lost, k_origin);
  CHECK(line.rfind("event=lost name=x cause=\"the backend said \\\"no\\\"\\nat once\" namespace=dlock", 0) == 0);
  CHECK(line.find('\n') == std::string::npos);
}

TEST_CASE("a JSON record has the time, the fields as numbers where numeric, and a sentence") {
  auto record = nlohmann::json::parse(json_record(released_event(), k_origin));
  CHECK(record["time"] == "2026-12-03T18:55:18.123Z");
  CHECK(record["event"] == "released");
  CHECK(record["fence"] == 42);
  CHECK(record["duration_ms"] == 1500);
  CHECK(record["pid"] == 4242);
  CHECK(record["message"].get<std::string>().find("released lock 'nightly-report'") != std::string::npos);

  RunEvent high = released_event();
  high.fence = 18446744073709551615ULL; // a fence past INT64_MAX stays a number, unchanged
  CHECK(nlohmann::json::parse(json_record(high, k_origin))["fence"].get<std::uint64_t>() == 18446744073709551615ULL);
}

TEST_CASE("an unavailable run ends with unlocked-end when the job ran without the lock") {
  RunEvent unavailable;
  unavailable.kind = EventKind::unavailable;
  for (const char *action : {"fail", "skip"}) {
    unavailable.action = action;
    CHECK(is_terminal(unavailable));
  }
  unavailable.action = "run";
  CHECK_FALSE(is_terminal(unavailable));
  RunEvent acquired;
  CHECK_FALSE(is_terminal(acquired));
  RunEvent end;
  end.kind = EventKind::unlocked_end;
  CHECK(is_terminal(end));
}

TEST_CASE("a syslog record is RFC 5424 with the fields as structured data") {
  std::string record = syslog_record(released_event(), k_origin);
  std::regex rfc5424(
      R"(<14>1 2026-12-03T18:55:18\.123000Z web1 dlock 4242 released \[dlock@32473( [a-z_]+="[^"\\\]]*")+\] .+)");
  CHECK(std::regex_match(record, rfc5424));
  CHECK(record.find(" fence=\"42\"") != std::string::npos);
  RunEvent lost = released_event();
  lost.kind = EventKind::lost;
  lost.cause = "a \"bad] \\ cause";
  record = syslog_record(lost, k_origin);
  CHECK(record.rfind("<11>1 ", 0) == 0); // user.err
  CHECK(record.find("cause=\"a \\\"bad\\] \\\\ cause\"") != std::string::npos);
}

TEST_CASE("a journal record uses the binary form for a value with a newline") {
  RunEvent lost = released_event();
  lost.kind = EventKind::lost;
  lost.cause = "two\nlines";
  std::string record = journal_record(lost, k_origin);
  CHECK(record.find("PRIORITY=3\n") != std::string::npos);
  CHECK(record.find("SYSLOG_IDENTIFIER=dlock\n") != std::string::npos);
  CHECK(record.find("DLOCK_NAME=nightly-report\n") != std::string::npos);
  CHECK(record.find("DLOCK_FENCE=42\n") != std::string::npos);
  std::string binary = std::string("DLOCK_CAUSE\n") + '\x09' + std::string(7, '\0') + "two\nlines\n";
  CHECK(record.find(binary) != std::string::npos);
}

TEST_CASE("log targets: stderr, syslog[:SOCKET], journal[:SOCKET] or a file") {
  CHECK(parse_log_target("stderr").kind == LogTarget::Kind::standard_error);
  CHECK(parse_log_target("syslog").path == "/dev/log");
  CHECK(parse_log_target("syslog:/tmp/s").path == "/tmp/s");
  CHECK(parse_log_target("journal").path == "/run/systemd/journal/socket");
  CHECK(parse_log_target("./syslog").kind == LogTarget::Kind::file);
  CHECK(parse_log_target("syslog:").kind == LogTarget::Kind::file);
  CHECK_THROWS_AS(parse_log_target(""), UsageError);
}

TEST_CASE("runs of one name are counted by outcome, every outcome written from the first") {
  MetricsText metrics;
  count_run(metrics, released_event(), "dlock", std::nullopt, Millis(3));
  RunEvent busy;
  busy.kind = EventKind::busy;
  busy.name = "nightly-report";
  busy.exit_status = 75;
  count_run(metrics, busy, "dlock", std::nullopt, Millis(0));
  metrics = parse_metrics(render_metrics(metrics));
  auto &runs = metrics.samples["dlock_runs_total"];
  CHECK(runs.size() == 6);
  CHECK(runs[R"({name="nightly-report",namespace="dlock",outcome="ran"})"] == "1");
  CHECK(runs[R"({name="nightly-report",namespace="dlock",outcome="busy"})"] == "1");
  CHECK(runs[R"({name="nightly-report",namespace="dlock",outcome="lost"})"] == "0");
  auto labels = R"({name="nightly-report",namespace="dlock"})";
  CHECK(metrics.samples["dlock_last_exit_status"][labels] == "75");
  CHECK(metrics.samples["dlock_last_success_timestamp_seconds"][labels] == "1796324118.123");
  CHECK(metrics.samples["dlock_last_start_timestamp_seconds"][labels] == "1796324116.623");
  CHECK(metrics.samples["dlock_last_duration_seconds"][labels] == "1.500");
}

TEST_CASE("a metrics file keeps other names, other families and label order apart") {
  std::string text = "# HELP other_metric something\n"
                     "other_metric{a=\"1\"} 7\n"
                     "dlock_runs_total{outcome=\"ran\",namespace=\"dlock\",name=\"b\"} 5\n"
                     "dlock_runs_total{name=\"bad\" 1\n"
                     "dlock_last_exit_status{name=\"b\",namespace=\"dlock\"} notanumber\n"
                     "garbage line\n";
  MetricsText metrics = parse_metrics(text);
  CHECK(metrics.foreign == std::vector<std::string>{"other_metric{a=\"1\"} 7"});
  CHECK(metrics.samples["dlock_runs_total"].size() == 1);
  CHECK(metrics.samples["dlock_last_exit_status"].empty());
  RunEvent run = released_event();
  run.name = "b";
  count_run(metrics, run, "dlock", std::nullopt, std::nullopt);
  CHECK(metrics.samples["dlock_runs_total"][R"({name="b",namespace="dlock",outcome="ran"})"] == "6");
  std::string out = render_metrics(metrics);
  CHECK(out.find("# TYPE dlock_runs_total counter\n") != std::string::npos);
  CHECK(out.find("other_metric{a=\"1\"} 7\n") != std::string::npos);
}
