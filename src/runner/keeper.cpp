#include "runner/keeper.hpp"

#include "runner/heartbeat.hpp"
#include "runner/keeper_socket.hpp"

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
#include <utility>

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

// On a socket with send(), not write(): a keeper that refused us may have
// closed already, and that is no reason for SIGPIPE.
bool write_all(int fd, const std::string &text, bool socket = false) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = socket ? send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL)
                       : write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads one '\n'-terminated line within `timeout`; empty on timeout/EOF.
// `closed`, if given, tells the two apart: true when the peer closed the
// connection before a whole line came.
std::string read_line(int fd, Millis timeout, const Interrupt *interrupt = nullptr, bool *closed = nullptr) {
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
    if (n <= 0) {
      if (closed) *closed = true;
      return line.find('\n') != std::string::npos ? line : std::string();
    }
    line.append(buffer, static_cast<std::size_t>(n));
    if (line.find('\n') != std::string::npos || line.size() > 4096) return line.substr(0, line.find('\n'));
  }
}

// Session renewals every T/3 and the window the script's `renew`s set, as
// a poll loop that also serves the socket.
class Keeper {
public:
  // `window`: how long the lock stays without a `renew` from the script
  // (--ttl). The session's own lease (lease.ttl: on ZooKeeper the
  // negotiated session timeout) only sets how often the keeper renews.
  Keeper(backend::Backend &backend, backend::Lease lease, LockIdentity identity, std::string token, UniqueFd listener,
         Millis window)
      : m_backend(backend), m_lease(std::move(lease)), m_identity(std::move(identity)), m_token(std::move(token)),
        m_socket(std::move(listener)), m_window(window), m_expires(m_lease.confirmed_at + window),
        m_renew_every(renew_interval(m_lease.ttl)), m_next_renew(m_lease.confirmed_at + m_renew_every) {}

  void serve() {
    const Interrupt &interrupt = Signals::interrupt();
    std::vector<pollfd> fds;
    for (;;) {
      auto now = SteadyClock::now();
      if (now >= m_expires || interrupt.requested()) {
        release();
        return;
      }
      if (now >= m_next_renew && !renew_session()) return;
      auto wake = std::min(m_expires, m_next_renew);
      if (auto deadline = m_socket.next_deadline()) wake = std::min(wake, *deadline);
      auto timeout = std::chrono::duration_cast<Millis>(wake - now + std::chrono::microseconds(999)).count();
      // News from the backend (a forced release, an expired session):
      // renew at once, which finds out whether the lock is still ours.
      int news = m_backend.event_fd();
      fds.clear();
      fds.push_back({interrupt.fd(), POLLIN, 0});
      fds.push_back({news, POLLIN, 0});
      m_socket.add_poll_fds(fds);
      int ready = poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(timeout, 0, 60'000)));
      if (ready < 0 && errno != EINTR) throw Error(ExitCode::internal, errno_message("keeper: poll failed", errno));
      if (ready > 0 && news >= 0 && (fds[1].revents & POLLIN) && !renew_session()) return;
      for (PendingRequest &request : m_socket.serve(fds, 2))
        if (!handle(request)) return;
    }
  }

private:
  // False once the lock is gone and the keeper should end. The session is
  // renewed for what is left of the window, so that what the backend
  // records (the file backend's time left) ends with the window, not later.
  bool renew_session() {
    auto now = SteadyClock::now();
    Millis left = std::max(Millis(1), std::chrono::duration_cast<Millis>(m_expires - now));
    backend::RenewResult result = renew_or_unknown(m_backend, m_lease, left);
    if (result.outcome == backend::RenewOutcome::lost) return false;
    if (result.outcome == backend::RenewOutcome::renewed) {
      m_lease.ttl = result.ttl;
      m_lease.confirmed_at = result.sent_at;
      // A backend that granted less than it was asked has a lease of its
      // own (a session): renew often enough for that one.
      if (result.ttl < left) m_renew_every = std::min(m_renew_every, renew_interval(result.ttl));
      m_next_renew = result.sent_at + m_renew_every;
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

  KeeperReply done() const {
    KeeperReply reply;
    reply.answer = KeeperAnswer::done;
    reply.fence = m_lease.fence;
    reply.confirmed_at = m_lease.confirmed_at;
    reply.ttl = m_lease.ttl;
    reply.window = m_window;
    return reply;
  }

  // False once the keeper should end.
  bool handle(PendingRequest &pending) {
    std::optional<KeeperRequest> request = parse_request(pending.line);
    bool authentic = request && request->lock == m_identity && constant_time_equal(request->token, m_token);
    if (!authentic) {
      answer(pending, format_reply(KeeperReply{}));
      return true;
    }
    if (request->operation == KeeperOperation::release) {
      KeeperReply reply = done();
      release();
      answer(pending, format_reply(reply));
      return false;
    }
    // 0: renew for the window last given (by acquire or a renew --ttl).
    if (request->ttl.count() > 0) m_window = request->ttl;
    backend::RenewResult result = renew_or_unknown(m_backend, m_lease, m_window);
    if (result.outcome == backend::RenewOutcome::lost) {
      answer(pending, format_reply(KeeperReply{}));
      return false;
    }
    if (result.outcome == backend::RenewOutcome::unknown) {
      KeeperReply failed;
      failed.answer = KeeperAnswer::error;
      failed.code = to_int(ExitCode::unavailable);
      failed.message = result.reason;
      answer(pending, format_reply(failed));
      return true;
    }
    m_expires = result.sent_at + m_window;
    m_lease.ttl = result.ttl;
    m_lease.confirmed_at = result.sent_at;
    m_renew_every = renew_interval(result.ttl);
    m_next_renew = result.sent_at + m_renew_every;
    answer(pending, format_reply(done()));
    return true;
  }

  backend::Backend &m_backend;
  backend::Lease m_lease; // confirmed_at and ttl: t0 and T of the last confirmed renewal
  LockIdentity m_identity;
  std::string m_token;
  KeeperSocket m_socket;
  Millis m_window;
  SteadyClock::time_point m_expires;
  Millis m_renew_every;
  SteadyClock::time_point m_next_renew;
};

// Once acquire has its answer the pipe is closed and `fd` is -1: a later
// failure must not write into whatever descriptor reused the number.
void report(int fd, const json &result) {
  if (fd >= 0) write_all(fd, result.dump() + "\n");
}

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
        listen(listener.get(), 64) != 0)
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
    json acquired = {
        {"outcome", "acquired"},
        {"token", token},
        {"fence", lease.fence},
        {"confirmed_at_ns",
         std::chrono::duration_cast<std::chrono::nanoseconds>(lease.confirmed_at.time_since_epoch()).count()},
        {"ttl_ms", lease.ttl.count()},
        {"window_ms", request.ttl.count()},
        {"limit", lease.limit}};
    if (lease.slot) acquired["slot"] = *lease.slot;
    report(result_fd, acquired);
    close(std::exchange(result_fd, -1));
    Keeper keeper(*backend, lease, identity_of(config, request.name), token, std::move(listener), request.ttl);
    keeper.serve();
  } catch (const Error &failure) {
    report(result_fd, {{"outcome", "error"}, {"code", to_int(failure.code())}, {"message", failure.what()}});
  } catch (const std::exception &failure) {
    report(result_fd, {{"outcome", "error"}, {"code", to_int(ExitCode::internal)}, {"message", failure.what()}});
  }
  return 0;
}

// Connects to the keeper named by `token` within `deadline`; an empty fd
// when there is no such keeper. The socket is non-blocking, so a keeper
// that is stopped (its backlog full) costs the deadline, not for ever.
UniqueFd connect_keeper(const std::string &token, SteadyClock::time_point deadline) {
  UniqueFd connection(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!connection) throw Error(ExitCode::internal, errno_message("cannot create a socket", errno));
  socklen_t length = 0;
  sockaddr_un address = keeper_address(token.substr(0, k_id_hex), length);
  for (;;) {
    if (connect(connection.get(), reinterpret_cast<sockaddr *>(&address), length) == 0) break;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return {}; // ECONNREFUSED: no keeper of that name
    if (SteadyClock::now() >= deadline) throw UnavailableError("the lock's keeper process did not answer in time");
    poll(nullptr, 0, 10); // its backlog is full: it is busy or stopped
  }
  // Anyone can bind an abstract name once its keeper is gone: only a
  // keeper of our own user or of root is believed, also by root.
  std::optional<uid_t> keeper_uid = peer_uid(connection.get());
  if (!keeper_uid) return {};
  if (*keeper_uid != geteuid() && *keeper_uid != 0)
    throw Error(ExitCode::auth, fmt::format("the keeper of this token runs as uid {}, not as uid {}: renew or "
                                            "release the lock as the user who acquired it",
                                            *keeper_uid, geteuid()));
  return connection;
}

KeeperReply ask_keeper(const KeeperRequest &request, Millis timeout) {
  KeeperReply reply;
  if (!is_keeper_token(request.token)) return reply;
  auto deadline = SteadyClock::now() + timeout;
  UniqueFd connection = connect_keeper(request.token, deadline);
  if (!connection) return reply;
  // A keeper that refuses us answers before it reads: its answer is worth
  // reading even when our request could not be sent.
  bool sent = write_all(connection.get(), format_request(request), true);
  auto left = std::max(Millis(1), std::chrono::duration_cast<Millis>(deadline - SteadyClock::now()));
  bool closed = false;
  std::string line = read_line(connection.get(), left, nullptr, &closed);
  // A keeper that closes without an answer has ended (it ends only once
  // its lock is gone: released, lost or expired) or died, and with it the
  // token's hold on the lock: as when no keeper of that name is left.
  if (line.empty() && (!sent || closed)) return reply;
  if (line.empty()) throw UnavailableError("the lock's keeper process did not answer in time");
  std::optional<KeeperReply> parsed = parse_reply(line);
  if (!parsed) throw Error(ExitCode::internal, "the lock's keeper process gave an answer dlock does not understand");
  if (parsed->answer == KeeperAnswer::refused)
    throw Error(ExitCode::auth, "the lock's keeper serves only the user who acquired the lock and root");
  if (parsed->answer == KeeperAnswer::error) throw Error(static_cast<ExitCode>(parsed->code), parsed->message);
  return *parsed;
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
    lease.mode = request.mode;
    lease.limit = result.value("limit", 1U);
    if (result.contains("slot")) lease.slot = result.value("slot", 0U);
    // The keeper's t0, on the steady clock every process of the host shares.
    lease.confirmed_at = SteadyClock::time_point(std::chrono::duration_cast<SteadyClock::duration>(
        std::chrono::nanoseconds(result.value("confirmed_at_ns", std::int64_t{0}))));
    out.lease = lease;
    out.window = Millis(result.value("window_ms", std::int64_t{0}));
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

KeeperReply keeper_renew(const LockIdentity &lock, const std::string &token, Millis ttl, Millis timeout) {
  return ask_keeper({KeeperOperation::renew, lock, token, ttl}, timeout);
}

KeeperReply keeper_release(const LockIdentity &lock, const std::string &token, Millis timeout) {
  return ask_keeper({KeeperOperation::release, lock, token, Millis(0)}, timeout);
}

} // namespace dlock::runner
