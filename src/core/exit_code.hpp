#pragma once

namespace dlock {

// Mirrors the exit status table of the user contract (spec.md). Scripts depend
// on these numbers: never renumber one.
enum class ExitCode : int {
  ok = 0,
  not_held = 3,
  usage = 64,
  unavailable = 69,
  internal = 70,
  busy = 75,
  lost = 76,
  auth = 77,
  config = 78,
  max_runtime = 124,
  cannot_execute = 126,
  not_found = 127,
};

constexpr int to_int(ExitCode code) { return static_cast<int>(code); }

} // namespace dlock
