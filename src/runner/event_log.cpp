#include "runner/event_log.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/unique_fd.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace dlock::runner {

namespace {

constexpr const char k_dev_log[] = "/dev/log";
constexpr const char k_journal_socket[] = "/run/systemd/journal/socket";
constexpr int k_facility_user = 1;
// A record stays well inside one datagram (journald and rsyslog take 8 KiB
// and more); longer fields are cut.
constexpr std::size_t k_max_value = 1024;

// "2026-12-03T18:00:00.123Z" (digits: 3 or 6 after the point).
std::string utc_time(std::chrono::system_clock::time_point at, int digits) {
  auto since = at.time_since_epoch();
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since - seconds).count();
  std::time_t t = seconds.count();
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  return digits == 3 ? fmt::format("{}.{:03}Z", text, micros / 1000) : fmt::format("{}.{:06}Z", text, micros);
}

std::string cut(std::string value) {
  if (value.size() > k_max_value) value.resize(k_max_value);
  return value;
}

// Writes the whole record with one call, or drops it: never blocks.
class FdSink final : public EventSink {
public:
  enum class Format { logfmt, json, syslog, journal };
  FdSink(UniqueFd fd, Format format, EventOrigin origin, std::string where, bool stream)
      : m_fd(std::move(fd)), m_format(format), m_origin(std::move(origin)), m_where(std::move(where)),
        m_stream(stream) {}

  void record(const RunEvent &event) noexcept override {
    try {
      std::string text;
      switch (m_format) {
      case Format::logfmt:
        text = "dlock: " + logfmt_record(event, m_origin) + "\n";
        break;
      case Format::json:
        text = json_record(event, m_origin) + "\n";
        break;
      case Format::syslog:
        text = syslog_record(event, m_origin);
        if (m_stream) text += '\n';
        break;
      case Format::journal:
        text = journal_record(event, m_origin);
        break;
      }
      ssize_t n;
      const int fd = m_fd ? m_fd.get() : STDERR_FILENO;
      do {
        n = m_format == Format::syslog || m_format == Format::journal
                ? send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL)
                : write(fd, text.data(), text.size());
      } while (n < 0 && errno == EINTR);
      if (n < 0 && !m_warned) {
        m_warned = true;
        say("warning: --log {}: a record could not be written ({}); the run goes on", m_where, std::strerror(errno));
      }
    } catch (...) {
      // Out of memory while formatting: the record is dropped.
    }
  }

private:
  UniqueFd m_fd; // empty: standard error
  Format m_format;
  EventOrigin m_origin;
  std::string m_where;
  bool m_stream;
  bool m_warned = false;
};

class NullSink final : public EventSink {
public:
  void record(const RunEvent &) noexcept override {}
};

// A datagram socket connected to `path` (a stream one where the receiver
// listens on a stream socket, as some syslog daemons do); empty on failure,
// with errno set.
UniqueFd connect_unix(const std::string &path, bool &stream) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) {
    errno = ENAMETOOLONG;
    return UniqueFd();
  }
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
    UniqueFd fd(socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return fd;
    if (connect(fd.get(), reinterpret_cast<const sockaddr *>(&address), sizeof address) == 0) {
      stream = type == SOCK_STREAM;
      return fd;
    }
    if (errno != EPROTOTYPE) return UniqueFd();
  }
  return UniqueFd();
}

} // namespace

LogTarget parse_log_target(const std::string &text) {
  if (text.empty())
    throw UsageError("--log takes stderr, syslog, journal or a FILE (syslog:SOCKET and journal:SOCKET for "
                     "another socket), not ''");
  auto socket_of = [&](const char *word, const char *fallback) -> std::optional<std::string> {
    std::string prefix = std::string(word) + ":";
    if (text == word) return std::string(fallback);
    if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size()) return text.substr(prefix.size());
    return std::nullopt;
  };
  if (text == "stderr") return {LogTarget::Kind::standard_error, ""};
  if (auto path = socket_of("syslog", k_dev_log)) return {LogTarget::Kind::syslog, *path};
  if (auto path = socket_of("journal", k_journal_socket)) return {LogTarget::Kind::journal, *path};
  return {LogTarget::Kind::file, text};
}

std::unique_ptr<EventSink> open_event_log(const LogTarget &target, const EventOrigin &origin) {
  using Format = FdSink::Format;
  switch (target.kind) {
  case LogTarget::Kind::standard_error:
    return std::make_unique<FdSink>(UniqueFd(), Format::logfmt, origin, "stderr", false);
  case LogTarget::Kind::file: {
    // O_NONBLOCK: a FIFO without a reader is refused, a full one drops
    // records, instead of holding the run up. O_NOFOLLOW: a symlink
    // another user planted in a shared directory (/tmp) must not make a
    // run write where they chose.
    UniqueFd fd(open(target.path.c_str(),
                     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW, 0644));
    if (!fd) {
      say("warning: --log {}: {}; events are not logged", target.path,
          errno == ELOOP ? k_symlink_refused : std::strerror(errno));
      return std::make_unique<NullSink>();
    }
    return std::make_unique<FdSink>(std::move(fd), Format::json, origin, target.path, false);
  }
  case LogTarget::Kind::syslog:
  case LogTarget::Kind::journal: {
    const bool syslog = target.kind == LogTarget::Kind::syslog;
    bool stream = false;
    UniqueFd fd = connect_unix(target.path, stream);
    const char *what = syslog ? "syslog" : "journal";
    if (!fd) {
      say("warning: --log {}: cannot reach {} ({}); events are not logged", what, target.path, std::strerror(errno));
      return std::make_unique<NullSink>();
    }
    return std::make_unique<FdSink>(std::move(fd), syslog ? Format::syslog : Format::journal, origin,
                                    fmt::format("{} ({})", what, target.path), stream);
  }
  }
  return std::make_unique<NullSink>();
}

int event_severity(const RunEvent &event) {
  switch (event.kind) {
  case EventKind::lost:
  case EventKind::unavailable:
    return 3;
  case EventKind::max_runtime:
  case EventKind::unlocked_end:
    return 4;
  case EventKind::busy:
  case EventKind::interrupted:
    return 5;
  case EventKind::acquired:
  case EventKind::released:
    break;
  }
  return 6;
}

std::string logfmt_record(const RunEvent &event, const EventOrigin &origin) {
  std::string out;
  for (const auto &[key, raw, number] : event_fields(event, origin)) {
    std::string value = cut(raw);
    bool quote = value.empty() || value.find_first_of(" =\"\\\n\t") != std::string::npos;
    if (!out.empty()) out += ' ';
    out += key + '=';
    if (!quote) {
      out += value;
      continue;
    }
    out += '"' + quoted_text(value) + '"';
  }
  return out;
}

std::string json_record(const RunEvent &event, const EventOrigin &origin) {
  nlohmann::ordered_json record;
  record["time"] = utc_time(event.at, 3);
  for (const auto &[key, value, number] : event_fields(event, origin)) {
    if (!number)
      record[key] = cut(value);
    else if (value.front() == '-')
      record[key] = std::stoll(value);
    else
      record[key] = std::stoull(value);
  }
  record["message"] = cut(event_message(event));
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string syslog_record(const RunEvent &event, const EventOrigin &origin) {
  // RFC 5424 6.3.3: in PARAM-VALUE, '"', '\' and ']' are escaped.
  std::string data = "[dlock@32473";
  for (const auto &[key, raw, number] : event_fields(event, origin)) {
    if (key == "host" || key == "pid") continue; // the header has them
    data += ' ' + key + "=\"";
    for (char c : cut(raw)) {
      if (c == '"' || c == '\\' || c == ']') data += '\\';
      data += c == '\n' ? ' ' : c;
    }
    data += '"';
  }
  data += ']';
  std::string host = origin.host.empty() ? "-" : origin.host.substr(0, 255);
  std::replace_if(
      host.begin(), host.end(), [](char c) { return c <= ' ' || c > '~'; }, '_');
  return fmt::format("<{}>1 {} {} dlock {} {} {} {}", k_facility_user * 8 + event_severity(event),
                     utc_time(event.at, 6), host, origin.pid, event_word(event.kind), data, cut(event_message(event)));
}

std::string journal_record(const RunEvent &event, const EventOrigin &origin) {
  std::string out;
  auto field = [&](const std::string &key, const std::string &raw) {
    std::string value = cut(raw);
    if (value.find('\n') == std::string::npos) {
      out += key + '=' + value + '\n';
      return;
    }
    // The binary form: KEY, newline, the length as 64-bit little endian.
    out += key + '\n';
    std::uint64_t size = value.size();
    for (int i = 0; i < 8; ++i)
      out += static_cast<char>((size >> (8 * i)) & 0xff);
    out += value + '\n';
  };
  field("MESSAGE", event_message(event));
  field("PRIORITY", std::to_string(event_severity(event)));
  field("SYSLOG_IDENTIFIER", "dlock");
  field("SYSLOG_FACILITY", std::to_string(k_facility_user));
  field("SYSLOG_PID", std::to_string(origin.pid));
  for (const auto &[key, value, number] : event_fields(event, origin)) {
    if (key == "pid") continue;
    std::string upper = "DLOCK_";
    for (char c : key)
      upper += c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    field(upper, value);
  }
  return out;
}

} // namespace dlock::runner
