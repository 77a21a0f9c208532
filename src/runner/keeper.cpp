#include "runner/keeper.hpp"

#include "runner/heartbeat.hpp"

#include "backend/registry.hpp"
#include "core/error.hpp"
#include "core/unique_fd.hpp"
#include "runner/runner.hpp"
#include "runner/timeline.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dlock::runner {

namespace {

using nlohmann::json;

constexpr std::size_t k_id_hex = 16;
constexpr std::size_t k_secret_hex = 32;

bool is_hex(const std::string &text) { return text.find_first_not_of("0123456789abcdef") == std::string::npos; }

sockaddr_un keeper_address(const std::string &id, socklen_t &length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string name = "dlock-keeper-" + id; // abstract: sun_path[0] stays '\0'
  std::copy(name.begin(), name.end(), address.sun_path + 1);
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return address;
}

bool write_all(int fd, const std::string &text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads one '\n'-terminated line within `timeout`; empty on timeout/EOF.
std::string read_line(int fd, Millis timeout, const Interrupt *interrupt = nullptr) {
  std::string line;
  auto deadline = SteadyClock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<Millis>(deadline - SteadyClock::now()).count();
    if (left <= 0) return {};
    pollfd fds[2] = {{fd, POLLIN, 0}, {interrupt ? interrupt->fd() : -1, POLLIN, 0}};
    int ready = poll(fds, 2, static_cast<int>(std::min<long long>(left, 60'000)));
    if (ready < 0 && errno != EINTR) return {};
    if (ready <= 0) continue;
    if (fds[1].revents & POLLIN) return {};
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buffer[512];
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return line.find('\n') != std::string::npos ? line : std::string();
    line.append(buffer, static_cast<std::size_t>(n));
    if (line.find('\n') != std::string::npos || line.size() > 4096) return line.substr(0, line.find('\n'));
  }
}

std::vector<std::string> split_tabs(const std::string &line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (;;) {
    auto tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

class Keeper {
public:
  // `window`: how long the lock stays without a `renew` from the script
  // (--ttl). The session's own lease (lease.ttl: on ZooKeeper the
  // negotiated session timeout) only sets how often the keeper renews.
  Keeper(backend::Backend &backend, backend::Lease lease, std::string token, UniqueFd listener, Millis window)
      : m_backend(backend), m_lease(std::move(lease)), m_token(std::move(token)), m_listener(std::move(listener)),
        m_ttl(window), m_expires(m_lease.confirmed_at + window),
        m_next_renew(m_lease.confirmed_at + renew_interval(m_lease.ttl)) {}

  void serve() {
    const Interrupt &interrupt = Signals::interrupt();
    for (;;) {
      auto now = SteadyClock::now();
      if (now >= m_expires || interrupt.requested()) {
        release();
        return;
      }
      if (now >= m_next_renew && !renew_session()) return;
      auto wake = std::min(m_expires, m_next_renew);
      auto timeout = std::chrono::duration_cast<Millis>(wake - now + std::chrono::microseconds(999)).count();
      // News from the backend (a forced release, an expired session):
      // renew at once, which finds out whether the lock is still ours.
      int news = m_backend.event_fd();
      pollfd fds[3] = {{m_listener.get(), POLLIN, 0}, {interrupt.fd(), POLLIN, 0}, {news, POLLIN, 0}};
      int ready = poll(fds, news >= 0 ? 3 : 2, static_cast<int>(std::clamp<long long>(timeout, 0, 60'000)));
      if (ready > 0 && news >= 0 && (fds[2].revents & POLLIN) && !renew_session()) return;
      if (ready > 0 && (fds[0].revents & POLLIN)) {
        int connection = accept4(m_listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (connection >= 0 && !handle(UniqueFd(connection))) return;
      }
    }
  }

private:
  // False once the lock is gone and the keeper should end.
  bool renew_session() {
    backend::RenewResult result = renew_or_unknown(m_backend, m_lease, m_ttl);
    if (result.outcome == backend::RenewOutcome::lost) return false;
    if (result.outcome == backend::RenewOutcome::renewed) {
      m_lease.ttl = result.ttl;
      m_next_renew = result.sent_at + renew_interval(result.ttl);
    } else {
      m_next_renew = SteadyClock::now() + retry_interval(m_lease.ttl, 0.5);
    }
    return true;
  }

  void release() {
    try {
      m_backend.release(m_lease);
    } catch (const std::exception &) {
      // The session ends with this process anyway.
    }
  }

  bool handle(UniqueFd connection) {
    std::string line = read_line(connection.get(), Millis(1000));
    auto fields = split_tabs(line);
    bool authentic = fields.size() >= 3 && fields[1] == m_lease.name && constant_time_equal(fields[2], m_token);
    if (!authentic) {
      write_all(connection.get(), "not-owner\n");
      return true;
    }
    if (fields[0] == "release") {
      release();
      write_all(connection.get(), fmt::format("ok\t{}\t{}\n", m_ttl.count(), m_lease.fence));
      return false;
    }
    if (fields[0] == "renew" && fields.size() >= 4) {
      // 0: renew for the lease's own length, as given to acquire.
      if (long long asked = std::atoll(fields[3].c_str()); asked > 0) m_ttl = Millis(asked);
      backend::RenewResult result = renew_or_unknown(m_backend, m_lease, m_ttl);
      if (result.outcome == backend::RenewOutcome::lost) {
        write_all(connection.get(), "not-owner\n");
        return false;
      }
      if (result.outcome == backend::RenewOutcome::unknown) {
        write_all(connection.get(), fmt::format("error\t{}\t{}\n", to_int(ExitCode::unavailable), result.reason));
        return true;
      }
      m_expires = result.sent_at + m_ttl;
      m_lease.ttl = result.ttl;
      m_next_renew = result.sent_at + renew_interval(result.ttl);
      write_all(connection.get(), fmt::format("ok\t{}\t{}\n", m_ttl.count(), m_lease.fence));
      return true;
    }
    write_all(connection.get(), "not-owner\n");
    return true;
  }

  backend::Backend &m_backend;
  backend::Lease m_lease;
  std::string m_token;
  UniqueFd m_listener;
  Millis m_ttl;
  SteadyClock::time_point m_expires;
  SteadyClock::time_point m_next_renew;
};

void report(int fd, const json &result) { write_all(fd, result.dump() + "\n"); }

int keeper_body(int result_fd, pid_t parent, const backend::BackendConfig &config, const backend::LockRequest &request,
                std::optional<Millis> wait) {
  setsid();
  Signals::reset_after_fork();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) return 1;
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2; ++fd)
    dup2(null_fd, fd);
  if (null_fd > 2) close(null_fd);
  [[maybe_unused]] int ignored = chdir("/");
  try {
    backend::LockRequest held_request = request;
    held_request.holder.pid = getpid(); // the keeper is the process the kernel or server sees
    auto backend = backend::create_backend(config);
    std::string id = random_hex(k_id_hex / 2);
    std::string token = id + "-" + random_hex(k_secret_hex / 2);
    UniqueFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    socklen_t length = 0;
    sockaddr_un address = keeper_address(id, length);
    if (!listener || bind(listener.get(), reinterpret_cast<sockaddr *>(&address), length) != 0 ||
        listen(listener.get(), 16) != 0)
      throw Error(ExitCode::internal, errno_message("cannot create the keeper socket", errno));

    backend::AcquireResult result = take_lock(*backend, held_request, wait);
    if (result.outcome == backend::AcquireOutcome::busy) {
      report(result_fd, {{"outcome", "busy"}, {"holder", describe_holder(*backend, request.name)}});
      return 0;
    }
    if (result.outcome == backend::AcquireOutcome::interrupted) {
      report(result_fd, {{"outcome", "interrupted"}, {"signal", result.signal}});
      return 0;
    }
    const backend::Lease &lease = *result.lease;
    // From here on the keeper outlives `dlock acquire`: disarm the death
    // signal *before* handing out the token, or the caller's exit could make
    // us release a lock whose token it just printed. If the caller is
    // already gone, nobody has the token: let go.
    prctl(PR_SET_PDEATHSIG, 0);
    if (getppid() != parent) {
      backend->release(lease);
      return 0;
    }
    report(result_fd,
           {{"outcome", "acquired"}, {"token", token}, {"fence", lease.fence}, {"ttl_ms", request.ttl.count()}});
    close(result_fd);
    Keeper keeper(*backend, lease, token, std::move(listener), request.ttl);
    keeper.serve();
  } catch (const Error &failure) {
    report(result_fd, {{"outcome", "error"}, {"code", to_int(failure.code())}, {"message", failure.what()}});
  } catch (const std::exception &failure) {
    report(result_fd, {{"outcome", "error"}, {"code", to_int(ExitCode::internal)}, {"message", failure.what()}});
  }
  return 0;
}

KeeperReply ask_keeper(const std::string &request, const std::string &token, Millis timeout) {
  KeeperReply reply;
  if (!is_keeper_token(token)) return reply;
  UniqueFd connection(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  socklen_t length = 0;
  sockaddr_un address = keeper_address(token.substr(0, k_id_hex), length);
  if (!connection || connect(connection.get(), reinterpret_cast<sockaddr *>(&address), length) != 0) return reply;
  if (!write_all(connection.get(), request)) return reply;
  std::string line = read_line(connection.get(), timeout);
  auto fields = split_tabs(line);
  if (fields[0] == "ok" && fields.size() >= 3) {
    reply.answer = KeeperAnswer::done;
    reply.ttl = Millis(std::atoll(fields[1].c_str()));
    reply.fence = std::strtoull(fields[2].c_str(), nullptr, 10);
  } else if (fields[0] == "error" && fields.size() >= 3) {
    throw Error(static_cast<ExitCode>(std::atoi(fields[1].c_str())), fields[2]);
  } else if (line.empty() && fields[0] != "not-owner") {
    throw UnavailableError("the lock's keeper process did not answer in time");
  }
  return reply;
}

} // namespace

bool is_keeper_token(const std::string &token) {
  return token.size() == k_id_hex + 1 + k_secret_hex && token[k_id_hex] == '-' && is_hex(token.substr(0, k_id_hex)) &&
         is_hex(token.substr(k_id_hex + 1));
}

KeeperResult acquire_with_keeper(const backend::BackendConfig &config, const backend::LockRequest &request,
                                 std::optional<Millis> wait, int conflict_exit_code) {
  Signals::install();
  std::fflush(nullptr);
  int result_pipe[2];
  if (pipe2(result_pipe, O_CLOEXEC) != 0) throw Error(ExitCode::internal, errno_message("cannot create a pipe", errno));
  pid_t parent = getpid();
  pid_t keeper = fork();
  if (keeper < 0) throw Error(ExitCode::internal, errno_message("cannot fork the keeper", errno));
  if (keeper == 0) {
    close(result_pipe[0]);
    _exit(keeper_body(result_pipe[1], parent, config, request, wait));
  }
  close(result_pipe[1]);
  UniqueFd result_fd(result_pipe[0]);
  // The keeper does the waiting; a signal to us is passed on so that its
  // wait ends cleanly and it reports "interrupted".
  std::string line;
  for (;;) {
    line = read_line(result_fd.get(), Millis(24LL * 3600 * 1000 * 365), &Signals::interrupt());
    if (!line.empty() || !Signals::interrupt().requested()) break;
    kill(keeper, Signals::interrupt().requested());
    Signals::clear_stop();
  }
  json result = json::parse(line, nullptr, false);
  if (result.is_discarded() || result.value("outcome", "") != "acquired") {
    int status = 0;
    while (waitpid(keeper, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (result.is_discarded()) throw Error(ExitCode::internal, "the keeper process ended without an answer");
  std::string outcome = result.value("outcome", "");
  KeeperResult out;
  if (outcome == "acquired") {
    backend::Lease lease;
    lease.name = request.name;
    lease.token = result.value("token", "");
    lease.fence = result.value("fence", std::uint64_t{0});
    lease.ttl = Millis(result.value("ttl_ms", std::int64_t{0}));
    lease.confirmed_at = SteadyClock::now();
    out.lease = lease;
  } else if (outcome == "busy") {
    out.exit_status = conflict_exit_code;
    out.message = busy_message(request.name, result.value("holder", ""), wait);
  } else if (outcome == "interrupted") {
    out.exit_status = 128 + result.value("signal", 0);
  } else {
    throw Error(static_cast<ExitCode>(result.value("code", to_int(ExitCode::internal))),
                result.value("message", "keeper failed"));
  }
  return out;
}

KeeperReply keeper_renew(const std::string &name, const std::string &token, Millis ttl, Millis timeout) {
  return ask_keeper(fmt::format("renew\t{}\t{}\t{}\n", name, token, ttl.count()), token, timeout);
}

KeeperReply keeper_release(const std::string &name, const std::string &token, Millis timeout) {
  return ask_keeper(fmt::format("release\t{}\t{}\n", name, token), token, timeout);
}

} // namespace dlock::runner
