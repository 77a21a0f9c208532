#pragma once

#include "runner/events.hpp"

#include <memory>
#include <string>

namespace dlock::runner {

// --log TARGET: "stderr"; "syslog" (/dev/log) or "syslog:SOCKET"; "journal"
// (systemd-journald's native socket) or "journal:SOCKET"; anything else is
// a FILE that records are appended to (a file named like a target: ./syslog).
struct LogTarget {
  enum class Kind { standard_error, syslog, journal, file };
  Kind kind = Kind::standard_error;
  std::string path; // the socket or the file
};
LogTarget parse_log_target(const std::string &text); // usage error (64) for ""

// The sink for a target. One that cannot be opened (no /dev/log, a file
// that cannot be created) warns once and records nothing: logging never
// fails a run.
std::unique_ptr<EventSink> open_event_log(const LogTarget &target, const EventOrigin &origin);

// The records, as each target gets them (pure, for the tests).
// syslog(3)'s severity: 3 err (lost, unavailable), 4 warning (max-runtime,
// a job run without the lock), 5 notice (busy, interrupted), 6 info.
int event_severity(const RunEvent &event);
// "event=acquired name=x fence=12 ...": logfmt, quoted where needed.
std::string logfmt_record(const RunEvent &event, const EventOrigin &origin);
// One JSON object: time, the fields (numbers as numbers) and message.
std::string json_record(const RunEvent &event, const EventOrigin &origin);
// RFC 5424: <PRI>1 TIMESTAMP HOST dlock PID EVENT [dlock@32473 ...] MESSAGE,
// facility user.
std::string syslog_record(const RunEvent &event, const EventOrigin &origin);
// systemd-journald's native protocol: MESSAGE=, PRIORITY=,
// SYSLOG_IDENTIFIER=dlock, and DLOCK_EVENT=, DLOCK_NAME=, ... per field.
std::string journal_record(const RunEvent &event, const EventOrigin &origin);

} // namespace dlock::runner
