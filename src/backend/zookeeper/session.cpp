#include "backend/zookeeper/session.hpp"

#include "backend/zookeeper/four_letter.hpp"
#include "backend/zookeeper/frame_limit.hpp"

#include "core/error.hpp"
#include "core/log.hpp"

#include <fmt/format.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>

namespace dlock::backend::zookeeper {

namespace {

// What the client library logged last at error level: the reason a
// connection attempt failed, for the message when none succeeds.
std::mutex g_log_mutex;
std::string g_last_error;
int g_refused = 0;

void on_log(const char *message) {
  std::string_view text(message);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.remove_suffix(1);
  {
    std::lock_guard lock(g_log_mutex);
    if (text.find("ZOO_ERROR") != std::string_view::npos) {
      // "...: Socket [127.0.0.1:1] zk retcode=-4, errno=111(Connection refused): ..."
      auto cause = text.find("errno=");
      auto end = cause == std::string_view::npos ? cause : text.find(')', cause);
      if (cause != std::string_view::npos && end != std::string_view::npos) {
        auto open = text.find('(', cause);
        if (open != std::string_view::npos && open < end)
          g_last_error = std::string(text.substr(open + 1, end - open - 1));
        if (text.substr(cause, 10) == "errno=111(") ++g_refused;
      }
    }
  }
  detail(2, "zookeeper client: {}", text);
}

NodeStat convert(const Stat *stat) {
  NodeStat out;
  if (!stat) return out;
  out.czxid = stat->czxid;
  out.ctime_ms = stat->ctime;
  out.ephemeral_owner = stat->ephemeralOwner;
  out.version = stat->version;
  return out;
}

// The completion's `data` is a heap copy of the shared pointer: the call
// may be abandoned by its waiter (deadline) and still be completed later.
Call &finish_begin(const void *data) { return **static_cast<const CallPtr *>(data); }

void finish_end(const void *data) {
  auto *holder = static_cast<const CallPtr *>(data);
  Call &call = **holder;
  call.finished.store(true, std::memory_order_release);
  if (call.notify_fd >= 0) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto ignored = ::write(call.notify_fd, &one, sizeof one);
  }
  delete holder; // may free the call: its waiter gave up
}

void on_stat(int rc, const Stat *stat, const void *data) {
  Call &call = finish_begin(data);
  call.rc = rc;
  call.stat = convert(stat);
  finish_end(data);
}

void on_data(int rc, const char *value, int length, const Stat *stat, const void *data) {
  Call &call = finish_begin(data);
  call.rc = rc;
  if (value && length > 0) call.value.assign(value, static_cast<std::size_t>(length));
  call.stat = convert(stat);
  finish_end(data);
}

void on_created(int rc, const char *path, const Stat *stat, const void *data) {
  Call &call = finish_begin(data);
  call.rc = rc;
  if (path) call.value = path;
  call.stat = convert(stat);
  finish_end(data);
}

void on_children(int rc, const String_vector *strings, const Stat *, const void *data) {
  Call &call = finish_begin(data);
  call.rc = rc;
  if (strings)
    for (int i = 0; i < strings->count; ++i)
      call.children.emplace_back(strings->data[i]);
  finish_end(data);
}

// What a multi needs until it completes: its ops, the client's results
// and, for creates, the buffers the created paths are written to.
struct Batch {
  explicit Batch(std::size_t size) : ops(size), results(size), names(size) {}
  std::vector<zoo_op_t> ops;
  std::vector<zoo_op_result_t> results;
  std::vector<std::string> names;
};

void on_created_all(int rc, const void *data) {
  Call &call = finish_begin(data);
  call.rc = rc;
  if (rc == ZOK) {
    const auto &batch = *std::static_pointer_cast<Batch>(call.scratch);
    for (const auto &name : batch.names)
      call.children.emplace_back(name.c_str());
  }
  finish_end(data);
}

void on_void(int rc, const void *data) {
  Call &call = finish_begin(data);
  call.rc = rc;
  finish_end(data);
}

// Blocks every signal in the calling thread while alive, so that threads
// it starts (the client's I/O and completion threads) never take one.
class SignalsBlocked {
public:
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &m_saved);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &m_saved, nullptr); }
  SignalsBlocked(const SignalsBlocked &) = delete;
  SignalsBlocked &operator=(const SignalsBlocked &) = delete;

private:
  sigset_t m_saved;
};

} // namespace

std::string describe(int rc) {
  switch (rc) {
  case ZCONNECTIONLOSS:
    return "connection lost";
  case ZOPERATIONTIMEOUT:
    return "operation timed out";
  case ZNONODE:
    return "no such node";
  case ZNOAUTH:
    return "not authorised (the node's ACL does not allow it)";
  case ZNODEEXISTS:
    return "node exists";
  case ZSESSIONEXPIRED:
    return "session expired";
  case ZAUTHFAILED:
    return "authentication failed";
  case ZCLOSING:
    return "client closing";
  case ZINVALIDSTATE:
    return "session expired or closed";
  default:
    return zerror(rc);
  }
}

Session::Session(const SessionOptions &options) : m_options(options) {
  m_event.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  m_news.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!m_event || !m_news) throw Error(ExitCode::internal, errno_message("cannot create an eventfd", errno));
  zoo_set_debug_level(verbosity() >= 2 ? ZOO_LOG_LEVEL_INFO : ZOO_LOG_LEVEL_ERROR);
  {
    std::lock_guard lock(g_log_mutex);
    g_last_error.clear();
    g_refused = 0;
  }
  clear_frame_refusal();
  auto timeout_ms = static_cast<int>(std::clamp<Millis::rep>(options.session_timeout.count(), 1, 1 << 30));
  // The leader starts the session's clock when it creates the session,
  // after this.
  m_created_at = SteadyClock::now();
  {
    SignalsBlocked quiet;
    m_handle = zookeeper_init2(options.hosts.c_str(), &Session::on_watch, timeout_ms, nullptr, this, 0, &on_log);
  }
  if (!m_handle)
    throw ConfigError(
        fmt::format("{}: the ZooKeeper client refused the address list: {}", options.label, std::strerror(errno)));
  // Addresses are resolved again only after a lost connection, not on
  // every turn of the client's I/O loop.
  zoo_set_servers_resolution_delay(m_handle, -1);
  if (options.digest) {
    // Queued before any request of ours: the server applies it first.
    zoo_add_auth(m_handle, "digest", options.digest->data(), static_cast<int>(options.digest->size()), nullptr,
                 nullptr);
  }
  auto deadline = SteadyClock::now() + options.connect_timeout;
  std::size_t hosts = options.addresses.size();
  // Started at the first connection the server closes before a session
  // (see below), and watched while the client tries again.
  std::optional<ClosingProbe> probe;
  for (;;) {
    int state = m_state.load();
    if (state == ZOO_CONNECTED_STATE) break;
    if (state == ZOO_AUTH_FAILED_STATE)
      throw Error(ExitCode::auth, fmt::format("{}: ZooKeeper refused the credentials", options.label));
    std::string cause;
    std::string hint = "is the server running?";
    bool closed = false; // the server closed each connection before a session was set up
    {
      std::lock_guard lock(g_log_mutex);
      // What the client says of a server that closed the connection
      // (EHOSTDOWN: it read end-of-file).
      closed = g_last_error == std::strerror(EHOSTDOWN) || g_last_error == std::strerror(EPIPE) ||
               g_last_error == std::strerror(ECONNRESET);
      // Every address refused: nothing listens there, no point waiting.
      if (static_cast<std::size_t>(g_refused) >= hosts) {
        cause = "connection refused";
        closed = false;
      } else if (SteadyClock::now() >= deadline) {
        cause = last_frame_refusal();
        if (!cause.empty()) {
          hint = "is that a ZooKeeper server?";
          closed = false;
        } else {
          cause = g_last_error.empty() ? fmt::format("no session within {}", format_duration(options.connect_timeout))
                                       : g_last_error;
        }
      }
    }
    // At accept, before reading anything, is where a server over its
    // maxClientCnxns closes; a member without a quorum reads the handshake
    // first. Silent connections of our own tell the two apart: started at
    // the first close the client sees, so that a loaded server has the
    // rest of --connect-timeout to close one; at most a second more is
    // given after it, on top of --connect-timeout for every other cause of
    // this failure. (Asked without the log's lock held.)
    if (closed && !probe) probe.emplace(options.addresses);
    if (probe) probe->watch(SteadyClock::now());
    if (closed && !cause.empty()) {
      if (std::string closing = probe->watch(SteadyClock::now() + Millis(1000)); !closing.empty()) {
        cause = fmt::format("{} closes every new connection at once", closing);
        hint = "ZooKeeper does so when this address already holds maxClientCnxns connections, 60 by default, and "
               "each running dlock holds one: raise maxClientCnxns in zoo.cfg (0: no limit) or start fewer at once;";
      } else {
        cause = "the server closed each connection before a session was set up";
        hint = "a member without a quorum does so (is a majority of the ensemble up?), as does a port that expects "
               "TLS;";
      }
    }
    if (!cause.empty()) {
      zookeeper_close(m_handle);
      m_handle = nullptr;
      throw UnavailableError(fmt::format("cannot reach ZooKeeper at {}: {} ({} --connect-timeout {})", options.label,
                                         cause, hint, format_duration(options.connect_timeout)));
    }
    // Connection attempts are logged, not signalled: look again every 10ms.
    wait_event(std::min(deadline, SteadyClock::now() + Millis(10)), -1);
  }
  detail(1, "zookeeper: session 0x{:x} on {}, timeout {} (asked {})", id(), zoo_get_current_server(m_handle),
         format_duration(negotiated_timeout()), format_duration(options.session_timeout));
}

Session::~Session() {
  // The client's close waits up to 1.5s for the server's answer. A server
  // that has already left a request of ours unanswered gets no such wait:
  // the handle is left to the process's exit, and the server ends the
  // session (and its nodes) after T.
  if (m_handle && !m_stalled.load()) close();
}

int Session::close() {
  if (!m_handle) return ZOK;
  SignalsBlocked quiet;
  int rc = zookeeper_close(m_handle);
  m_handle = nullptr;
  return rc;
}

Millis Session::negotiated_timeout() const { return Millis(zoo_recv_timeout(m_handle)); }

std::int64_t Session::id() const { return zoo_client_id(m_handle)->client_id; }

bool Session::connected() const { return m_state.load() == ZOO_CONNECTED_STATE; }

namespace {

void drain_fd(int fd) {
  std::uint64_t count;
  while (::read(fd, &count, sizeof count) > 0) {
  }
}

void signal_fd(int fd) {
  std::uint64_t one = 1;
  [[maybe_unused]] auto ignored = ::write(fd, &one, sizeof one);
}

} // namespace

void Session::drain_news() const { drain_fd(m_news.get()); }

void Session::on_watch(_zhandle *, int type, int state, const char *path, void *context) {
  auto *self = static_cast<Session *>(context);
  if (type == ZOO_SESSION_EVENT) {
    self->m_state.store(state);
    if (state == ZOO_EXPIRED_SESSION_STATE) self->m_expired.store(true);
  } else if (path) {
    std::lock_guard lock(self->m_mutex);
    self->m_node_events.push_back({path, type == ZOO_DELETED_EVENT});
  }
  signal_fd(self->m_news.get());
}

std::vector<Session::NodeEvent> Session::take_node_events() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_node_events, {});
}

CallPtr Session::start() {
  auto call = std::make_shared<Call>();
  call->notify_fd = m_event.get();
  call->sent_at = SteadyClock::now();
  return call;
}

namespace {

// Hands the request to the client, or completes the call at once with the
// client's refusal (session expired, closing).
template <typename Send> CallPtr submit(CallPtr call, Send send) {
  auto *holder = new CallPtr(call);
  int rc = send(static_cast<const void *>(holder));
  if (rc != ZOK) {
    call->rc = rc;
    call->finished.store(true, std::memory_order_release);
    delete holder;
  }
  return call;
}

// With credentials: the creator (every identity of the session) may do
// anything with the node, everybody may read it, so that status works for all.
ACL g_restricted_entries[] = {{ZOO_PERM_ALL, {const_cast<char *>("auth"), const_cast<char *>("")}},
                              {ZOO_PERM_READ, {const_cast<char *>("world"), const_cast<char *>("anyone")}}};
ACL_vector g_restricted_acl = {2, g_restricted_entries};

} // namespace

CallPtr Session::create(const std::string &path, const std::string &data, int flags, bool restricted) {
  const ACL_vector *acl = restricted ? &g_restricted_acl : &ZOO_OPEN_ACL_UNSAFE;
  return submit(start(), [&](const void *holder) {
    return zoo_acreate2(m_handle, path.c_str(), data.data(), static_cast<int>(data.size()), acl, flags, &on_created,
                        holder);
  });
}

CallPtr Session::remove(const std::string &path, int version) {
  return submit(start(),
                [&](const void *holder) { return zoo_adelete(m_handle, path.c_str(), version, &on_void, holder); });
}

CallPtr Session::exists(const std::string &path, bool watch) {
  return submit(start(), [&](const void *holder) {
    return zoo_aexists(m_handle, path.c_str(), watch ? 1 : 0, &on_stat, holder);
  });
}

CallPtr Session::get(const std::string &path, bool watch) {
  return submit(start(),
                [&](const void *holder) { return zoo_aget(m_handle, path.c_str(), watch ? 1 : 0, &on_data, holder); });
}

CallPtr Session::children(const std::string &path, bool watch) {
  return submit(start(), [&](const void *holder) {
    return zoo_aget_children2(m_handle, path.c_str(), watch ? 1 : 0, &on_children, holder);
  });
}

CallPtr Session::confirm(const std::vector<std::string> &paths) {
  CallPtr call = start();
  auto batch = std::make_shared<Batch>(paths.size());
  call->scratch = batch;
  for (std::size_t i = 0; i < paths.size(); ++i)
    zoo_check_op_init(&batch->ops[i], paths[i].c_str(), -1);
  return submit(call, [&](const void *holder) {
    return zoo_amulti(m_handle, static_cast<int>(paths.size()), batch->ops.data(), batch->results.data(), &on_void,
                      holder);
  });
}

CallPtr Session::create_all(const std::vector<std::string> &paths, const std::string &data, int flags,
                            bool restricted) {
  const ACL_vector *acl = restricted ? &g_restricted_acl : &ZOO_OPEN_ACL_UNSAFE;
  CallPtr call = start();
  auto batch = std::make_shared<Batch>(paths.size());
  call->scratch = batch;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    // Room for the path and the ten digits a sequential node gets.
    batch->names[i].resize(paths[i].size() + 16);
    zoo_create_op_init(&batch->ops[i], paths[i].c_str(), data.data(), static_cast<int>(data.size()), acl, flags,
                       batch->names[i].data(), static_cast<int>(batch->names[i].size()));
  }
  return submit(call, [&](const void *holder) {
    return zoo_amulti(m_handle, static_cast<int>(paths.size()), batch->ops.data(), batch->results.data(),
                      &on_created_all, holder);
  });
}

CallPtr Session::remove_all(const std::vector<std::string> &paths) {
  CallPtr call = start();
  auto batch = std::make_shared<Batch>(paths.size());
  call->scratch = batch;
  for (std::size_t i = 0; i < paths.size(); ++i)
    zoo_delete_op_init(&batch->ops[i], paths[i].c_str(), -1);
  return submit(call, [&](const void *holder) {
    return zoo_amulti(m_handle, static_cast<int>(paths.size()), batch->ops.data(), batch->results.data(), &on_void,
                      holder);
  });
}

void Session::note_confirmed(SteadyClock::time_point sent_at) {
  if (!m_confirmed.empty() && sent_at <= m_confirmed.back()) return;
  m_confirmed.push_back(sent_at);
  // Keep the newest entry at least T/3 older than the latest, and the ones after it.
  auto spacing = negotiated_timeout() / 3;
  while (m_confirmed.size() > 2 && m_confirmed[1] <= sent_at - spacing)
    m_confirmed.pop_front();
}

SteadyClock::time_point Session::lease_start() const {
  if (m_confirmed.empty()) return m_created_at;
  auto limit = m_confirmed.back() - negotiated_timeout() / 3;
  for (auto it = m_confirmed.rbegin(); it != m_confirmed.rend(); ++it)
    if (*it <= limit) return std::max(*it, m_created_at);
  return m_created_at;
}

SteadyClock::time_point Session::latest_confirmation() const {
  return m_confirmed.empty() ? m_created_at : std::max(m_confirmed.back(), m_created_at);
}

namespace {

// Polls `fds` (entries of -1 are skipped) until one is readable or `deadline` passes.
void poll_until(std::initializer_list<int> fds, std::optional<SteadyClock::time_point> deadline) {
  pollfd items[3];
  nfds_t count = 0;
  for (int fd : fds)
    if (fd >= 0 && count < 3) items[count++] = {fd, POLLIN, 0};
  int timeout = -1;
  if (deadline) {
    auto left = std::chrono::ceil<Millis>(*deadline - SteadyClock::now()).count();
    if (left <= 0) return;
    timeout = static_cast<int>(std::min<Millis::rep>(left, 1 << 30));
  }
  ::poll(items, count, timeout);
}

} // namespace

bool Session::wait(const Call &call, SteadyClock::time_point deadline, int interrupt_fd) const {
  for (;;) {
    if (call.done()) {
      m_stalled.store(false);
      return true;
    }
    if (SteadyClock::now() >= deadline) {
      m_stalled.store(true);
      return false;
    }
    if (interrupt_fd >= 0) {
      pollfd item{interrupt_fd, POLLIN, 0};
      if (::poll(&item, 1, 0) > 0) return false;
    }
    drain_fd(m_event.get());
    if (call.done()) return true;
    poll_until({m_event.get(), interrupt_fd}, deadline);
  }
}

void Session::wait_event(std::optional<SteadyClock::time_point> deadline, int interrupt_fd, const Call *call) const {
  if (call && call->done()) return;
  poll_until({m_news.get(), interrupt_fd, call ? m_event.get() : -1}, deadline);
  drain_fd(m_news.get());
  if (call) drain_fd(m_event.get());
}

bool Session::wait_connected(SteadyClock::time_point deadline, int interrupt_fd) const {
  for (;;) {
    if (m_expired.load()) return false;
    if (connected()) return true;
    if (SteadyClock::now() >= deadline) return false;
    if (interrupt_fd >= 0) {
      pollfd item{interrupt_fd, POLLIN, 0};
      if (::poll(&item, 1, 0) > 0) return false;
    }
    drain_fd(m_news.get());
    if (connected()) return true;
    poll_until({m_news.get(), interrupt_fd}, deadline);
  }
}

void Session::fail(int rc, const std::string &what) const {
  if (rc == ZNOAUTH)
    throw Error(ExitCode::auth, fmt::format("{}: {}: permission denied by the node's ACL (check the credentials "
                                            "in the URL, DLOCK_PASSWORD or --password-file)",
                                            m_options.label, what));
  if (rc == ZAUTHFAILED)
    throw Error(ExitCode::auth, fmt::format("{}: ZooKeeper refused the credentials", m_options.label));
  // A connection cut for an oversized frame shows as a lost one: say why.
  std::string refusal = last_frame_refusal();
  if (!refusal.empty() && (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED))
    throw UnavailableError(fmt::format("{}: {}: {} ({})", m_options.label, what, describe(rc), refusal));
  throw UnavailableError(fmt::format("{}: {}: {}", m_options.label, what, describe(rc)));
}

} // namespace dlock::backend::zookeeper
