#include "runner/events.hpp"

#include <fmt/format.h>

namespace dlock::runner {

const char *event_word(EventKind kind) {
  switch (kind) {
  case EventKind::acquired:
    return "acquired";
  case EventKind::busy:
    return "busy";
  case EventKind::interrupted:
    return "interrupted";
  case EventKind::released:
    return "released";
  case EventKind::lost:
    return "lost";
  case EventKind::max_runtime:
    return "max-runtime";
  case EventKind::unavailable:
    return "unavailable";
  case EventKind::unlocked_end:
    return "unlocked-end";
  }
  return "unknown";
}

bool is_terminal(const RunEvent &event) {
  if (event.kind == EventKind::unavailable) return event.action != "run";
  return event.kind != EventKind::acquired;
}

EventFields event_fields(const RunEvent &event, const EventOrigin &origin) {
  EventFields fields = {{"event", event_word(event.kind)}, {"name", event.name}};
  auto add = [&](const char *key, const auto &value) {
    if (value) fields.push_back({key, fmt::format("{}", *value), true});
  };
  add("fence", event.fence);
  auto millis = [](const std::optional<Millis> &value) {
    return value ? std::optional<long long>(value->count()) : std::nullopt;
  };
  add("wait_ms", millis(event.wait));
  add("duration_ms", millis(event.duration));
  add("exit_status", event.exit_status);
  add("job_status", event.job_status);
  add("renewals", event.renewals);
  if (!event.action.empty()) fields.push_back({"action", event.action});
  if (!event.cause.empty()) fields.push_back({"cause", event.cause});
  fields.push_back({"namespace", origin.lock_namespace});
  fields.push_back({"backend", origin.backend});
  fields.push_back({"host", origin.host});
  fields.push_back({"pid", fmt::format("{}", origin.pid), true});
  return fields;
}

std::string quoted_text(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string event_message(const RunEvent &event) {
  const std::string &name = event.name;
  auto ms = [](const std::optional<Millis> &value) { return format_duration(value.value_or(Millis(0))); };
  auto with_cause = [&](std::string text) { return event.cause.empty() ? text : text + ": " + event.cause; };
  switch (event.kind) {
  case EventKind::acquired:
    return fmt::format("acquired lock '{}' (fence {}) after {}", name, event.fence.value_or(0), ms(event.wait));
  case EventKind::busy:
    return fmt::format("lock '{}' is busy; the job did not run (tried for {})", name, ms(event.wait));
  case EventKind::interrupted:
    return with_cause(fmt::format("the wait for lock '{}' was interrupted; the job did not run", name));
  case EventKind::released:
    return fmt::format("released lock '{}' after {}; the job ended with status {}", name, ms(event.duration),
                       event.job_status.value_or(-1));
  case EventKind::lost:
    return with_cause(fmt::format("lost lock '{}'; the job was stopped", name));
  case EventKind::max_runtime:
    return fmt::format("job under lock '{}' ran past --max-runtime; it was stopped", name);
  case EventKind::unavailable:
    return with_cause(fmt::format("lock '{}': backend unavailable; {}", name,
                                  event.action == "run"    ? "running the job WITHOUT the lock"
                                  : event.action == "skip" ? "the job is skipped"
                                                           : "the job did not run"));
  case EventKind::unlocked_end:
    return fmt::format("job for lock '{}' ran WITHOUT the lock (backend unavailable) and ended with status {} "
                       "after {}",
                       name, event.job_status.value_or(-1), ms(event.duration));
  }
  return name;
}

} // namespace dlock::runner
