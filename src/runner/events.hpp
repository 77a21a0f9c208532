#pragma once

#include "core/duration.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlock::runner {

// What happened to one `dlock run`, as --log records it and --metrics-file
// counts it. A run ends with exactly one terminal event: busy, interrupted,
// released, lost, max_runtime, unavailable (when the job did not run) or
// unlocked_end (when --if-unavailable run ran it without the lock).
enum class EventKind { acquired, busy, interrupted, released, lost, max_runtime, unavailable, unlocked_end };

// "acquired", "max-runtime", "unlocked-end": the word in every record.
const char *event_word(EventKind kind);

struct RunEvent {
  EventKind kind = EventKind::acquired;
  std::string name;
  std::chrono::system_clock::time_point at = std::chrono::system_clock::now();
  std::optional<std::uint64_t> fence;
  std::optional<Millis> wait;     // how long taking the lock took (or was tried)
  std::optional<Millis> duration; // from the job's start to its end
  std::optional<int> exit_status; // what dlock exits with
  std::optional<int> job_status;  // what the job itself ended with (128+N for signal N)
  std::optional<int> renewals;
  std::string cause;  // lost, max_runtime, unavailable, interrupted: why, as a sentence
  std::string action; // unavailable: what --if-unavailable did (fail, run or skip)
};

// True for the one event that ends a run's record: every event but
// acquired, and but an unavailable whose action is run (the job then runs
// without the lock, and unlocked_end ends the run).
bool is_terminal(const RunEvent &event);

// Every run's records carry these too.
struct EventOrigin {
  std::string lock_namespace;
  std::string backend; // the URL without credentials
  std::string host;
  long pid = 0;
};

// One field of a record: its value as text, and whether that text is a
// number (JSON writes it unquoted).
struct EventField {
  std::string key;
  std::string value;
  bool number = false;
};
// The record's fields, in the order every format writes them ("event",
// "name", then only those set).
using EventFields = std::vector<EventField>;
EventFields event_fields(const RunEvent &event, const EventOrigin &origin);
// `value` for inside double quotes, as logfmt and Prometheus labels both
// want it: backslash before '"' and '\', a newline as \n.
std::string quoted_text(std::string_view value);
// One sentence for people: "acquired lock 'x' (fence 12) after 3 ms".
std::string event_message(const RunEvent &event);

// What --log FILE and --metrics-file say of a FILE that is a symlink:
// neither follows one (another user may have planted it in a shared
// directory).
inline constexpr const char *k_symlink_refused = "it is a symbolic link, not followed (give the file's own path)";

// Where events go. record() must never block for long nor throw: a log
// that cannot be written must not delay or fail the job.
class EventSink {
public:
  virtual ~EventSink() = default;
  virtual void record(const RunEvent &event) noexcept = 0;
};

// Hands every event to each of its sinks, in order.
class EventSinks final : public EventSink {
public:
  void add(std::unique_ptr<EventSink> sink) { m_sinks.push_back(std::move(sink)); }
  bool empty() const { return m_sinks.empty(); }
  void record(const RunEvent &event) noexcept override {
    for (auto &sink : m_sinks)
      sink->record(event);
  }

private:
  std::vector<std::unique_ptr<EventSink>> m_sinks;
};

} // namespace dlock::runner
