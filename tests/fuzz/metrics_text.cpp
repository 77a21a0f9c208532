// A --metrics-file left by earlier runs (or by anything else): parsed,
// a run counted into it and rendered again, which must parse to the same.
#include "runner/metrics_file.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  dlock::runner::MetricsText metrics = dlock::runner::parse_metrics(text);
  dlock::runner::RunEvent end;
  end.kind = dlock::runner::EventKind::released;
  end.name = "x";
  end.exit_status = 0;
  end.duration = dlock::Millis(5);
  dlock::runner::count_run(metrics, end, "dlock", std::nullopt, dlock::Millis(1));
  std::string once = dlock::runner::render_metrics(metrics);
  if (dlock::runner::render_metrics(dlock::runner::parse_metrics(once)) != once) std::abort();
  return 0;
}
