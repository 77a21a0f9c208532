#include "runner/metrics_file.hpp"

#include "core/log.hpp"
#include "core/unique_fd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dlock::runner {

namespace {

// A metrics file bigger than this is not dlock's: it is left alone.
constexpr std::size_t k_max_file = 4 << 20;
constexpr auto k_lock_patience = std::chrono::seconds(2);

struct Family {
  const char *name;
  const char *type;
  const char *help;
};

constexpr std::array<Family, 8> k_families = {{
    {"dlock_runs_total", "counter",
     "Runs of dlock run by outcome: ran, busy, interrupted, lost, max_runtime, unavailable."},
    {"dlock_last_attempt_timestamp_seconds", "gauge", "When the last run of this lock ended, whatever its outcome."},
    {"dlock_last_exit_status", "gauge", "What the last run of this lock exited with (the job's status when it ran)."},
    {"dlock_last_wait_seconds", "gauge", "How long the last run waited for (or tried) the lock."},
    {"dlock_last_start_timestamp_seconds", "gauge", "When the last job under this lock started."},
    {"dlock_last_end_timestamp_seconds", "gauge", "When the last job under this lock ended."},
    {"dlock_last_duration_seconds", "gauge", "How long the last job under this lock ran."},
    {"dlock_last_success_timestamp_seconds", "gauge", "When a job under this lock last ended with status 0."},
}};

constexpr std::array<const char *, 6> k_outcomes = {"ran", "busy", "interrupted", "lost", "max_runtime", "unavailable"};

bool ours(const std::string &family) {
  return std::any_of(k_families.begin(), k_families.end(), [&](const Family &f) { return family == f.name; });
}

bool name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

std::string render_labels(std::vector<std::pair<std::string, std::string>> labels) {
  std::sort(labels.begin(), labels.end());
  std::string out = "{";
  for (const auto &[key, value] : labels) {
    if (out.size() > 1) out += ',';
    out += key + "=\"" + quoted_text(value) + '"';
  }
  return out + "}";
}

// `{a="b",...}` from `text` at `at`, advancing it; nullopt if malformed.
std::optional<std::string> parse_labels(std::string_view text, std::size_t &at) {
  std::vector<std::pair<std::string, std::string>> labels;
  ++at; // '{'
  for (;;) {
    while (at < text.size() && (text[at] == ' ' || text[at] == ','))
      ++at;
    if (at < text.size() && text[at] == '}') {
      ++at;
      return render_labels(std::move(labels));
    }
    std::size_t start = at;
    while (at < text.size() && name_char(text[at], at == start))
      ++at;
    if (at == start || at + 1 >= text.size() || text[at] != '=' || text[at + 1] != '"') return std::nullopt;
    std::string key(text.substr(start, at - start)), value;
    for (at += 2;; ++at) {
      if (at >= text.size()) return std::nullopt;
      char c = text[at];
      if (c == '"') break;
      if (c == '\\') {
        if (++at >= text.size()) return std::nullopt;
        c = text[at] == 'n' ? '\n' : text[at];
      }
      value += c;
    }
    ++at;
    labels.emplace_back(std::move(key), std::move(value));
  }
}

std::string seconds(std::chrono::system_clock::time_point at) {
  return fmt::format("{:.3f}", std::chrono::duration<double>(at.time_since_epoch()).count());
}

std::string seconds(Millis value) { return fmt::format("{:.3f}", std::chrono::duration<double>(value).count()); }

const char *outcome_of(EventKind kind) {
  switch (kind) {
  case EventKind::busy:
    return "busy";
  case EventKind::interrupted:
    return "interrupted";
  case EventKind::lost:
    return "lost";
  case EventKind::max_runtime:
    return "max_runtime";
  case EventKind::unavailable:
  case EventKind::unlocked_end:
    return "unavailable";
  case EventKind::acquired:
  case EventKind::released:
    break;
  }
  return "ran";
}

} // namespace

MetricsText parse_metrics(std::string_view text) {
  MetricsText metrics;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    std::size_t at = 0;
    while (at < line.size() && name_char(line[at], at == 0))
      ++at;
    if (at == 0) continue; // comments, blank lines, garbage
    std::string family(line.substr(0, at));
    std::string labels = "{}";
    if (at < line.size() && line[at] == '{') {
      auto parsed = parse_labels(line, at);
      if (!parsed) continue;
      labels = *parsed;
    }
    while (at < line.size() && line[at] == ' ')
      ++at;
    std::size_t value_end = line.find(' ', at);
    std::string value(line.substr(at, value_end == std::string_view::npos ? line.size() - at : value_end - at));
    char *stop = nullptr;
    std::strtod(value.c_str(), &stop);
    if (value.empty() || *stop != '\0') continue;
    // Another family's line is kept as it was, if it is a sample at all: a
    // line the collector could not parse would make it drop the file.
    if (!ours(family))
      metrics.foreign.emplace_back(line);
    else
      metrics.samples[family][labels] = value;
  }
  return metrics;
}

std::string render_metrics(const MetricsText &metrics) {
  std::string out;
  for (const Family &family : k_families) {
    auto found = metrics.samples.find(family.name);
    if (found == metrics.samples.end() || found->second.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family.name, family.help, family.name, family.type);
    for (const auto &[labels, value] : found->second)
      out += fmt::format("{}{} {}\n", family.name, labels == "{}" ? "" : labels, value);
  }
  for (const std::string &line : metrics.foreign)
    out += line + '\n';
  return out;
}

void count_run(MetricsText &metrics, const RunEvent &end, const std::string &lock_namespace,
               std::optional<std::chrono::system_clock::time_point> started, std::optional<Millis> wait) {
  const std::string labels = render_labels({{"name", end.name}, {"namespace", lock_namespace}});
  auto &runs = metrics.samples["dlock_runs_total"];
  for (const char *outcome : k_outcomes) {
    std::string key = render_labels({{"name", end.name}, {"namespace", lock_namespace}, {"outcome", outcome}});
    auto [slot, fresh] = runs.try_emplace(key, "0");
    if (std::strcmp(outcome, outcome_of(end.kind)) != 0) continue;
    // A count that is not one (negative, NaN, huge) starts again from 0.
    double count = std::strtod(slot->second.c_str(), nullptr);
    if (!(count >= 0 && count < 1e15)) count = 0;
    slot->second = fmt::format("{}", static_cast<unsigned long long>(count) + 1);
  }
  auto set = [&](const char *family, std::string value) { metrics.samples[family][labels] = std::move(value); };
  set("dlock_last_attempt_timestamp_seconds", seconds(end.at));
  if (end.exit_status) set("dlock_last_exit_status", std::to_string(*end.exit_status));
  if (wait) set("dlock_last_wait_seconds", seconds(*wait));
  if (!end.duration) return; // the job did not run
  set("dlock_last_start_timestamp_seconds", seconds(started.value_or(end.at - *end.duration)));
  set("dlock_last_end_timestamp_seconds", seconds(end.at));
  set("dlock_last_duration_seconds", seconds(*end.duration));
  if (end.exit_status == 0) set("dlock_last_success_timestamp_seconds", seconds(end.at));
}

MetricsFile::MetricsFile(std::string path, std::string lock_namespace)
    : m_path(std::move(path)), m_namespace(std::move(lock_namespace)) {}

void MetricsFile::record(const RunEvent &event) noexcept {
  try {
    if (event.kind == EventKind::acquired) {
      m_started = event.at;
      m_wait = event.wait;
      return;
    }
    if (event.wait) m_wait = event.wait;
    if (is_terminal(event)) update(event);
  } catch (const std::exception &failure) {
    say("warning: --metrics-file {}: {}", m_path, failure.what());
  }
}

void MetricsFile::update(const RunEvent &end) {
  auto fail = [&](const std::string &what, int err) {
    say("warning: --metrics-file {}: {}{}; the metrics were not updated", m_path, what,
        err ? std::string(": ") + std::strerror(err) : "");
  };
  std::string dir = m_path.find('/') == std::string::npos ? "." : m_path.substr(0, m_path.rfind('/') + 1);
  std::string base = m_path.substr(m_path.rfind('/') == std::string::npos ? 0 : m_path.rfind('/') + 1);
  // Runs that share the file take turns on a lock file beside it, which
  // nobody else may open: on the directory itself, any user who can read
  // it could hold the lock and keep every run's metrics out. One that
  // cannot get its turn within the patience gives up rather than hold its
  // exit up. (The name does not end in .prom: the collector skips it.)
  std::string lock_path = dir + "." + base + ".lock";
  UniqueFd turn(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW, 0600));
  if (!turn && errno == ELOOP) return fail("its lock file " + lock_path + " is a symbolic link, not followed", 0);
  if (!turn) return fail("cannot open its lock file " + lock_path, errno);
  struct stat turn_info {};
  if (fstat(turn.get(), &turn_info) != 0 || !S_ISREG(turn_info.st_mode) ||
      (turn_info.st_uid != geteuid() && turn_info.st_uid != 0))
    return fail("its lock file " + lock_path + " is not a regular file of yours or root's", 0);
  if ((turn_info.st_mode & 0077) != 0 && turn_info.st_uid == geteuid() && fchmod(turn.get(), 0600) != 0)
    return fail("cannot close its lock file " + lock_path + " to others", errno);
  auto give_up = std::chrono::steady_clock::now() + k_lock_patience;
  while (flock(turn.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return fail("cannot lock " + lock_path, errno);
    if (std::chrono::steady_clock::now() >= give_up) return fail("another run kept " + lock_path + " locked", 0);
    poll(nullptr, 0, 5);
  }
  MetricsText metrics;
  mode_t mode = 0644;
  // O_NOFOLLOW: not a symlink another user planted (rename would replace
  // the link, but its target would be read and its mode copied).
  if (UniqueFd old(open(m_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW)); old) {
    struct stat info {};
    if (fstat(old.get(), &info) != 0 || !S_ISREG(info.st_mode)) return fail("it is not a regular file", 0);
    if (static_cast<std::size_t>(info.st_size) > k_max_file) return fail("it is larger than 4 MiB", 0);
    mode = info.st_mode & 0777;
    std::string text(static_cast<std::size_t>(info.st_size), '\0');
    std::size_t have = 0;
    while (have < text.size()) {
      ssize_t n = read(old.get(), text.data() + have, text.size() - have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      have += static_cast<std::size_t>(n);
    }
    text.resize(have);
    metrics = parse_metrics(text);
  } else if (errno == ELOOP) {
    return fail(k_symlink_refused, 0);
  } else if (errno != ENOENT) {
    return fail("cannot read it", errno);
  }
  count_run(metrics, end, m_namespace, m_started, m_wait);
  std::string text = render_metrics(metrics);
  // The temporary name does not end in .prom: the collector skips it.
  std::string temp = dir + "." + base + ".XXXXXX";
  UniqueFd out(mkostemp(temp.data(), O_CLOEXEC));
  if (!out) return fail("cannot create a temporary file beside it", errno);
  bool written = fchmod(out.get(), mode) == 0;
  for (std::size_t done = 0; written && done < text.size();) {
    ssize_t n = write(out.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      written = false;
    else
      done += static_cast<std::size_t>(n);
  }
  int err = errno;
  out.reset();
  if (!written || rename(temp.c_str(), m_path.c_str()) != 0) {
    if (written) err = errno;
    unlink(temp.c_str());
    return fail("cannot write it", err);
  }
}

} // namespace dlock::runner
