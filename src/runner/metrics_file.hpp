#pragma once

#include "runner/events.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::runner {

// The samples of a Prometheus text file, as dlock keeps them: each
// dlock_* sample by family and label set; every other sample line as it was.
struct MetricsText {
  // family -> rendered label set ({name="x",namespace="y"}) -> value
  std::map<std::string, std::map<std::string, std::string>> samples;
  std::vector<std::string> foreign; // lines of other families, kept as they were
};

// Parses what a previous run (or anything else) left in the file; lines
// that are not samples (comments, garbage) are dropped.
MetricsText parse_metrics(std::string_view text);
// The file's text: HELP and TYPE for each dlock family, then its samples
// in label order, then the foreign lines.
std::string render_metrics(const MetricsText &metrics);
// Folds one run's terminal event into the samples of its name.
// `started`: when its job started, if it ran.
void count_run(MetricsText &metrics, const RunEvent &end, const std::string &lock_namespace,
               std::optional<std::chrono::system_clock::time_point> started, std::optional<Millis> wait);

// --metrics-file FILE: at the end of each run, merges the run into FILE
// (node_exporter's textfile collector format) under a lock on FILE's
// directory, writing a temporary file there and renaming it over FILE, so
// that a reader sees the old file or the new one and runs sharing FILE do
// not lose each other's counts. Never throws; a failure is one warning.
class MetricsFile final : public EventSink {
public:
  MetricsFile(std::string path, std::string lock_namespace);
  void record(const RunEvent &event) noexcept override;

private:
  void update(const RunEvent &end);

  std::string m_path;
  std::string m_namespace;
  std::optional<std::chrono::system_clock::time_point> m_started;
  std::optional<Millis> m_wait;
};

} // namespace dlock::runner
