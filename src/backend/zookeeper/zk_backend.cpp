#include "backend/zookeeper/zk_backend.hpp"

#include "backend/zookeeper/diagnose.hpp"
#include "backend/zookeeper/four_letter.hpp"
#include "backend/zookeeper/join.hpp"
#include "backend/zookeeper/paths.hpp"
#include "backend/zookeeper/semaphore.hpp"
#include "backend/zookeeper/session.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "net/net.hpp"

#include <fmt/format.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <map>
#include <poll.h>
#include <unistd.h>

namespace dlock::backend::zookeeper {

namespace {

constexpr int k_default_port = 2181;
// Session timeout of a session opened only to look (status, list, force).
constexpr Millis k_inspection_session{10'000};

std::string basename_of(const std::string &path) { return path.substr(path.rfind('/') + 1); }

class ZooKeeperBackend : public TakingBackend, public SemaphoreHost {
public:
  explicit ZooKeeperBackend(const BackendConfig &config) : m_config(config), m_label(config.url.redacted()) {
    const Url &url = config.url;
    if (!url.has_authority || url.hosts.empty() || url.hosts.front().empty())
      throw ConfigError(fmt::format("{}: no server: zk://HOST[:PORT][,HOST[:PORT]...][/chroot]", m_label));
    std::vector<std::string> hosts;
    for (const auto &host : url.hosts) {
      m_addresses.push_back(net::parse_address(host, k_default_port));
      hosts.push_back(m_addresses.back().display());
    }
    m_hosts = fmt::format("{}", fmt::join(hosts, ","));
    // A refused connection ends the wait early only when every address is
    // numeric: a name may stand for several addresses, one of them serving.
    m_numeric = std::all_of(m_addresses.begin(), m_addresses.end(), [](const net::Address &address) {
      unsigned char buffer[sizeof(in6_addr)];
      return inet_pton(AF_INET, address.host.c_str(), buffer) == 1 ||
             inet_pton(AF_INET6, address.host.c_str(), buffer) == 1;
    });
    if (!url.query.empty())
      throw ConfigError(
          fmt::format("{}: unknown URL option '{}' (zk:// takes none)", m_label, url.query.begin()->first));
    m_base = base_path(url.path, config.lock_namespace);
    std::optional<std::string> password = config.password ? config.password : url.password;
    if (password && !url.user)
      throw ConfigError(fmt::format("{}: a password needs a user name for ZooKeeper's digest scheme: "
                                    "zk://USER@HOST:PORT with DLOCK_PASSWORD or --password-file",
                                    m_label));
    if (url.user) {
      if (!password)
        throw ConfigError(
            fmt::format("{}: user '{}' has no password (URL, DLOCK_PASSWORD or --password-file)", m_label, *url.user));
      m_digest = *url.user + ":" + *password;
    }
  }

  // The lease is the session's, negotiated when it was opened: any ttl (0 too) renews for that.
  RenewResult renew(const Lease &lease, Millis, std::optional<SteadyClock::time_point> answer_by) override {
    RenewResult result;
    auto held = m_held.find(lease_key(lease));
    if (held == m_held.end()) {
      result.outcome = RenewOutcome::lost;
      result.reason = "this ZooKeeper session holds no lock with that token";
      return result;
    }
    if (!m_session || m_session->id() != held->second.session || m_session->expired()) {
      result.outcome = RenewOutcome::lost;
      result.reason = "the ZooKeeper session expired: its lock node is gone";
      return result;
    }
    Session &session = *m_session;
    session.drain_news();
    // The member answers a read from its own memory, even when it has lost
    // its leader, which may have expired the session meanwhile: only a
    // write shows the leader's view. The read after it (same round trip)
    // re-arms the watch on our node.
    CallPtr write = session.confirm(held->second.paths);
    CallPtr call = session.exists(held->second.paths.front(), true);
    auto by = session.round_trip_deadline();
    if (answer_by) by = std::min(by, *answer_by);
    if (!session.wait(*call, by)) {
      result.reason = "no answer from ZooKeeper (or its member cannot reach the leader)";
      return result;
    }
    if (write->rc == ZOK && call->rc == ZOK && call->stat.ephemeral_owner == session.id()) {
      session.note_confirmed(write->sent_at);
      // Reported from the send time of this renewal, so the next one comes
      // T'/3 after it; T' ends where the lease as the leader sees it does.
      auto start = session.lease_start();
      result.outcome = RenewOutcome::renewed;
      result.ttl = std::chrono::duration_cast<Millis>(session.negotiated_timeout() - (write->sent_at - start));
      result.ttl = std::max(result.ttl, Millis(1));
      result.sent_at = write->sent_at;
      return result;
    }
    if (write->rc == ZNONODE) {
      result.outcome = RenewOutcome::lost;
      result.reason = fmt::format("our node {} was deleted (a forced release?)", held->second.paths.front());
      return result;
    }
    if (write->rc != ZOK && call->rc == ZOK) {
      result.reason = fmt::format("ZooKeeper did not confirm our node through its leader ({})", describe(write->rc));
      return result;
    }
    if (call->rc == ZOK || call->rc == ZNONODE) {
      result.outcome = RenewOutcome::lost;
      result.reason = fmt::format("our node {} was deleted (a forced release?)", held->second.paths.front());
      return result;
    }
    if (session.expired()) {
      result.outcome = RenewOutcome::lost;
      result.reason = "the ZooKeeper session expired: its lock node is gone";
      return result;
    }
    result.reason = describe(call->rc);
    return result;
  }

  ReleaseOutcome release(const Lease &lease) override {
    auto held = m_held.find(lease_key(lease));
    if (held == m_held.end()) return ReleaseOutcome::not_owner;
    Held node = held->second;
    m_held.erase(held);
    if (!m_session || m_session->id() != node.session || m_session->expired()) return ReleaseOutcome::not_owner;
    if (m_held.empty()) {
      // The last lock of the session: closing the session deletes our
      // node in the same step, one round trip instead of two.
      bool deleted = false;
      for (const auto &event : m_session->take_node_events())
        deleted = deleted || (event.deleted && event.path == node.paths.front());
      int rc = m_session->close();
      m_session.reset();
      if (deleted) return ReleaseOutcome::not_owner;
      if (rc == ZOK) return ReleaseOutcome::released;
      throw UnavailableError(
          fmt::format("{}: could not close the ZooKeeper session ({}): the lock ends when the session "
                      "times out",
                      m_label, describe(rc)));
    }
    // All our nodes at once: a waiter woken by one of them finds none left.
    CallPtr removal = m_session->remove_all(node.paths);
    const Call &call = finish(*m_session, removal, "cannot delete our node");
    if (call.rc == ZOK) return ReleaseOutcome::released;
    if (call.rc == ZNONODE) {
      leave(*m_session, node.paths); // one was deleted (a forced release): the others go too
      return ReleaseOutcome::not_owner;
    }
    m_session->fail(call.rc, fmt::format("cannot delete our node {}", node.paths.front()));
  }

  std::optional<LockStatus> force_release(const std::string &name) override {
    std::string lock = lock_path(m_base, name);
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto found = inspect(lock, name);
      if (!found) return break_semaphore(*this, this->session(std::nullopt), lock, name);
      Session &session = this->session(std::nullopt);
      // Every holder: the writer, or all the readers at once.
      std::vector<CallPtr> removals;
      for (const auto &path : found->paths)
        removals.push_back(session.remove(path));
      bool removed = false;
      for (std::size_t i = 0; i < removals.size(); ++i) {
        const Call &call = finish(session, removals[i], "cannot delete the holder's node");
        if (call.rc != ZOK && call.rc != ZNONODE)
          session.fail(call.rc, fmt::format("cannot delete the holder's node {}", found->paths[i]));
        removed = removed || call.rc == ZOK;
      }
      if (removed) return found->status;
      // The holders let go meanwhile: look again.
    }
    return std::nullopt;
  }

  LockStatus status(const std::string &name) override {
    auto found = inspect(lock_path(m_base, name), name);
    return found ? found->status : inspect_semaphore(*this, session(std::nullopt), lock_path(m_base, name), name);
  }

  std::vector<LockStatus> list(const std::string &prefix) override {
    Session &session = this->session(std::nullopt);
    std::map<std::string, std::vector<Contender>> queues; // by name
    std::vector<std::string> semaphores;                  // names with a leases/ node
    // Breadth first, one round trip per level: every node of a level is
    // asked for its children at once.
    std::vector<std::pair<std::string, std::string>> level = {{"", m_base}}; // name, path
    while (!level.empty()) {
      std::vector<CallPtr> calls;
      for (const auto &entry : level)
        calls.push_back(session.children(entry.second));
      std::vector<std::pair<std::string, std::string>> next;
      for (std::size_t i = 0; i < level.size(); ++i) {
        const Call &call = finish(session, calls[i], "cannot list the locks");
        if (call.rc == ZNONODE) continue;
        if (call.rc != ZOK) session.fail(call.rc, fmt::format("cannot list {}", level[i].second));
        const std::string &name = level[i].first;
        bool is_lock = false;
        for (const auto &child : call.children) {
          if (contender_sequence(child)) {
            is_lock = true;
            continue;
          }
          if (child == k_leases_child && !name.empty() && name.rfind(prefix, 0) == 0) semaphores.push_back(name);
          std::string child_name = (name.empty() ? "" : name + "/") + decode_level(child);
          // Only subtrees that can hold a name starting with `prefix`.
          if (child_name.rfind(prefix, 0) == 0 || prefix.rfind(child_name + "/", 0) == 0)
            next.emplace_back(child_name, level[i].second + "/" + child);
        }
        if (is_lock && !name.empty() && name.rfind(prefix, 0) == 0) queues[name] = contenders(call.children);
      }
      level = std::move(next);
    }
    // The holders of all queues in one more round trip.
    std::vector<std::pair<const std::string *, std::vector<CallPtr>>> holders;
    for (const auto &[name, queue] : queues)
      holders.emplace_back(&name, get_holders(session, lock_path(m_base, name), queue));
    std::vector<LockStatus> out;
    for (const auto &[name, calls] : holders) {
      bool read = std::all_of(calls.begin(), calls.end(), [&](const CallPtr &call) {
        return finish(session, call, "cannot read the holders").rc == ZOK;
      });
      if (read) {
        out.push_back(held_status(*name, queues[*name], calls));
      } else if (auto found = inspect(lock_path(m_base, *name), *name)) {
        out.push_back(std::move(found->status)); // a holder let go meanwhile: look again
      }
    }
    add_semaphores(*this, session, m_base, semaphores, out);
    return out;
  }

  PingResult ping() override {
    PingResult result = ping_servers(m_addresses, m_config.connect_timeout);
    result.detail = fmt::format("locks under {}", m_base);
    return result;
  }

  std::vector<Finding> diagnose(const DiagnoseOptions &options) override {
    return diagnose_servers(m_addresses, options.ttl, m_config.connect_timeout);
  }

  int event_fd() const override { return m_session && !m_held.empty() ? m_session->news_fd() : -1; }

private:
  struct Held {
    std::vector<std::string> paths; // our nodes, the first one's czxid the fence
    std::int64_t session = 0;
  };

  struct Found {
    LockStatus status;
    std::vector<std::string> paths; // the holders' nodes
  };

  // The session for an acquisition with `ttl` (a new one when the current
  // one asked for another timeout and holds nothing), or any live session.
  Session &session(std::optional<Millis> ttl) override {
    bool usable = m_session && !m_session->expired();
    if (usable && ttl && m_session->options().session_timeout != *ttl && m_held.empty()) usable = false;
    if (!usable) {
      m_session.reset();
      SessionOptions options;
      options.hosts = m_hosts;
      options.addresses = m_addresses;
      options.session_timeout = ttl.value_or(k_inspection_session);
      options.connect_timeout = m_config.connect_timeout;
      options.digest = m_digest;
      options.label = m_label;
      options.refusal_is_final = m_numeric;
      m_session = std::make_unique<Session>(options);
    }
    return *m_session;
  }

  // Waits for a round trip; no answer within the connect timeout is 69.
  // The reference is valid as long as the caller keeps `call`.
  const Call &finish(Session &session, const CallPtr &call, const std::string &what) const override {
    if (!session.wait(*call, call->sent_at + m_config.connect_timeout))
      throw UnavailableError(fmt::format("{}: {}: no answer from ZooKeeper within {}", m_label, what,
                                         format_duration(m_config.connect_timeout)));
    return *call;
  }

  // A read that survives a lost connection: asked again once the client
  // has reconnected, within the connect timeout.
  template <typename Send> const Call &read(Session &session, Send send, const std::string &what, CallPtr &keep) {
    auto deadline = SteadyClock::now() + m_config.connect_timeout;
    for (;;) {
      keep = send();
      const Call &call = finish(session, keep, what);
      if (call.rc != ZCONNECTIONLOSS || !session.wait_connected(deadline)) return call;
    }
  }

  // Asks for the nodes of the holders at the head of `queue` (one writer or
  // every reader before the first writer), all in one round trip.
  static std::vector<CallPtr> get_holders(Session &session, const std::string &lock,
                                          const std::vector<Contender> &queue) {
    std::vector<CallPtr> calls;
    for (std::size_t i = 0; i < holder_count(queue); ++i)
      calls.push_back(session.get(lock + "/" + queue[i].node));
    return calls;
  }

  static LockStatus held_status(const std::string &name, const std::vector<Contender> &queue,
                                const std::vector<CallPtr> &calls) {
    std::vector<HolderNode> holders;
    for (const auto &call : calls)
      holders.push_back({call->value, call->stat.czxid, call->stat.ctime_ms, call->stat.ephemeral_owner});
    return queue_status(name, queue, holders);
  }

  std::optional<Found> inspect(const std::string &lock, const std::string &name) {
    Session &session = this->session(std::nullopt);
    for (int attempt = 0; attempt < 5; ++attempt) {
      CallPtr keep_list;
      const Call &list = read(
          session, [&] { return session.children(lock); }, "cannot read the lock", keep_list);
      if (list.rc == ZNONODE) return std::nullopt;
      if (list.rc != ZOK) session.fail(list.rc, fmt::format("cannot read {}", lock));
      auto queue = contenders(list.children);
      if (queue.empty()) return std::nullopt;
      auto deadline = SteadyClock::now() + m_config.connect_timeout;
      std::vector<CallPtr> holders;
      int rc = ZCONNECTIONLOSS;
      while (rc == ZCONNECTIONLOSS) {
        holders = get_holders(session, lock, queue);
        rc = ZOK;
        for (const auto &call : holders)
          if (int got = finish(session, call, "cannot read the holders").rc; got != ZOK && rc == ZOK) rc = got;
        if (rc == ZCONNECTIONLOSS && !session.wait_connected(deadline)) break;
      }
      if (rc == ZNONODE) continue; // released meanwhile
      if (rc != ZOK) session.fail(rc, fmt::format("cannot read the holders of {}", lock));
      Found found{held_status(name, queue, holders), {}};
      for (std::size_t i = 0; i < holders.size(); ++i)
        for (const auto &node : queue[i].nodes)
          found.paths.push_back(lock + "/" + node);
      return found;
    }
    return std::nullopt;
  }

  // Creates the lock node and its parents (container nodes, which the
  // server removes once empty), all in one round trip. With credentials
  // the lock node gets the restricted ACL: deleting a child needs DELETE on
  // its parent, so only this identity can join, leave or break the queue of
  // this lock, and everyone can read it. The levels above stay open, so one
  // user's lock does not shut others out of the namespace.
  void create_parents(Session &session, const std::string &lock) override {
    std::vector<std::string> levels = ancestors(lock);
    levels.push_back(lock);
    std::vector<CallPtr> calls;
    for (const auto &level : levels)
      calls.push_back(session.create(level, "", m_containers ? ZOO_CONTAINER : ZOO_PERSISTENT,
                                     m_digest.has_value() && level == lock));
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const Call &call = finish(session, calls[i], "cannot create the lock's parent nodes");
      if (call.rc == ZOK || call.rc == ZNODEEXISTS) continue;
      if (m_containers && (call.rc == ZUNIMPLEMENTED || call.rc == ZBADARGUMENTS)) {
        m_containers = false; // a server before 3.5.3: plain persistent parents
        return create_parents(session, lock);
      }
      if (call.rc == ZNONODE) continue; // a container above was removed meanwhile: the retry recreates it
      session.fail(call.rc, fmt::format("cannot create {}", levels[i]));
    }
  }

  // A lease handed out must leave at least T/3 before t0 + T: when the
  // session's lease_start() is older than 2T/3 (a session reused after a
  // while, a wait whose checks went unanswered), our node is confirmed
  // through the leader again, twice if need be, T/3 apart. Throws 69 if the
  // leader cannot be reached.
  void confirm_lease(Session &session, const std::string &path) {
    Millis lease = session.negotiated_timeout();
    for (int round = 0; round < 3; ++round) {
      if (SteadyClock::now() < session.lease_start() + lease * 2 / 3) return;
      auto spaced = session.latest_confirmation() + lease / 3;
      while (round > 0 && SteadyClock::now() < spaced)
        session.wait_event(spaced, -1);
      CallPtr check = session.confirm(path);
      const Call &call = finish(session, check, "cannot confirm our node through the leader");
      if (call.rc == ZNONODE)
        throw UnavailableError(fmt::format("{}: our node {} was deleted (session expired?)", m_label, path));
      if (call.rc != ZOK) session.fail(call.rc, fmt::format("cannot confirm our node {}", path));
      session.note_confirmed(call.sent_at);
    }
  }

  // The nodes below `lock` that this session holds.
  std::vector<std::string> own_nodes(const Session &session, const std::string &lock) const {
    std::vector<std::string> out;
    for (const auto &[key, held] : m_held)
      if (held.session == session.id() && held.paths.front().rfind(lock + "/", 0) == 0 &&
          held.paths.front().find('/', lock.size() + 1) == std::string::npos)
        out.push_back(basename_of(held.paths.front()));
    return out;
  }

  void leave(Session &session, const std::string &path) override { leave(session, std::vector<std::string>{path}); }

  // Deletes our nodes (each on its own: those still there go).
  void leave(Session &session, const std::vector<std::string> &paths) {
    try {
      std::vector<CallPtr> removals;
      for (const auto &path : paths)
        removals.push_back(session.remove(path));
      for (const auto &removal : removals)
        finish(session, removal, "cannot delete our node");
    } catch (const Error &) {
      // They go with the session, which closes with dlock.
    }
  }

  struct Wake {
    AcquireOutcome outcome = AcquireOutcome::acquired; // acquired: the predecessor changed
    int signal = 0;
    bool deleted = false; // the predecessor is gone (else: changed, or already gone when we looked)
  };

  // Waits until `predecessor` changes or goes, the deadline passes or a
  // signal arrives. Every T/5 it checks, through the leader (a write that
  // changes nothing), that our own node is still there: that keeps the session's
  // lease_start() (t0 of the lease we may be handed) fresh, so the lock can
  // be taken the moment the predecessor goes, without one more round trip.
  Wake wait_for(Session &session, const std::string &predecessor, Queued &queued,
                std::optional<SteadyClock::time_point> deadline, const Interrupt &interrupt) {
    session.take_node_events();
    CallPtr keep;
    const Call &watch = read(
        session, [&] { return session.get(predecessor, true); }, "cannot watch the queue", keep);
    if (watch.rc == ZNONODE) return {};
    if (watch.rc != ZOK) session.fail(watch.rc, fmt::format("cannot watch {}", predecessor));
    Millis interval = session.negotiated_timeout() / 5;
    CallPtr check;
    auto next_check = session.latest_confirmation() + interval;
    for (;;) {
      if (int signal = interrupt.requested()) return {AcquireOutcome::interrupted, signal, false};
      auto now = SteadyClock::now();
      if (deadline && now >= *deadline) return {AcquireOutcome::busy, 0, false};
      if (session.expired())
        throw UnavailableError(fmt::format("{}: the ZooKeeper session expired while waiting", m_label));
      for (const auto &event : session.take_node_events())
        if (event.path == predecessor) return {AcquireOutcome::acquired, 0, event.deleted};
      if (check && !check->done() && now >= check->sent_at + m_config.connect_timeout) check.reset(); // ask again
      if (check && check->done()) {
        if (check->rc == ZOK)
          session.note_confirmed(check->sent_at);
        else if (check->rc == ZNONODE)
          throw UnavailableError(
              fmt::format("{}: our node {} was deleted while waiting", m_label, queued.paths.front()));
        // Unanswered (a lost connection, no leader): again soon, but not in a loop.
        next_check = std::max(session.latest_confirmation() + interval, now + Millis(100));
        check.reset();
      }
      if (!check && now >= next_check) check = session.confirm(queued.paths);
      auto until = next_check;
      if (check) until = std::max(now + Millis(1), check->sent_at + m_config.connect_timeout);
      if (deadline) until = std::min(until, *deadline);
      session.wait_event(until, interrupt.fd(), check.get());
    }
  }

  AcquireResult take(const LockRequest &request, bool wait, std::optional<SteadyClock::time_point> deadline,
                     const Interrupt *interrupt) override {
    std::string lock = lock_path(m_base, request.name);
    if (request.mode == HoldMode::semaphore) return take_semaphore(*this, lock, request, wait, deadline, interrupt);
    Session &session = this->session(request.ttl);
    Queued queued =
        join_queue(*this, session, lock, request, {m_config.connect_timeout, m_digest.has_value(), m_label});
    std::string own = basename_of(queued.paths.front());
    try {
      refuse_beside_semaphore(*this, session, lock, queued.children, request);
      for (;;) {
        auto queue = contenders(queued.children);
        QueuePlace place = place_in(queue, own, own_nodes(session, lock));
        if (!place.queued)
          throw UnavailableError(fmt::format("{}: our node {} left the queue of {} (session expired or node deleted)",
                                             m_label, own, lock));
        if (place.holds) break;
        if (!wait) {
          leave(session, queued.paths);
          return {AcquireOutcome::busy, std::nullopt, 0};
        }
        // Watch one node (paths.hpp, place_in): a release wakes one writer,
        // or the readers behind one writer, never the whole queue.
        std::string predecessor = lock + "/" + queue[place.watch].node;
        Wake wake = wait_for(session, predecessor, queued, deadline, *interrupt);
        if (wake.outcome != AcquireOutcome::acquired) {
          leave(session, queued.paths);
          return {wake.outcome, std::nullopt, wake.signal};
        }
        if (wake.deleted) {
          detail(1, "waiting for '{}': woken by ZooKeeper ({} gone)", request.name, basename_of(predecessor));
          // It was the last node keeping ours out as we last saw the queue,
          // and every node made since has a higher sequence than ours: the
          // lock is ours now. (Unless our session was last confirmed too
          // long ago: then the listing below confirms it again.)
          bool fresh = SteadyClock::now() < session.lease_start() + session.negotiated_timeout() * 2 / 3;
          if (place.watch_is_last && fresh) break;
        }
        // From the member's memory: a prefix of what the leader committed,
        // and a node below ours, once gone, never comes back.
        CallPtr keep_list;
        const Call &list = read(
            session, [&] { return session.children(lock); }, "cannot list the lock's queue", keep_list);
        if (list.rc != ZOK) session.fail(list.rc, fmt::format("cannot list {}", lock));
        queued.children = list.children;
      }
      return {AcquireOutcome::acquired, hold(session, request, queued.paths, queued.stat), 0};
    } catch (...) {
      leave(session, queued.paths);
      throw;
    }
  }

  Lease hold(Session &session, const LockRequest &request, const std::string &path, const NodeStat &stat) override {
    return hold(session, request, std::vector<std::string>{path}, stat);
  }

  Lease hold(Session &session, const LockRequest &request, const std::vector<std::string> &paths,
             const NodeStat &stat) {
    confirm_lease(session, paths.front());
    // Told at once if the node goes (forced release, expiry): the watch is
    // armed by a request we do not wait for.
    session.exists(paths.front(), true);
    session.drain_news(); // what happened while we queued is no news for the holder
    std::string token = random_hex(16);
    m_held[LeaseKey{request.name, token}] = Held{paths, session.id()};
    Lease lease;
    lease.name = request.name;
    lease.token = token;
    lease.fence = static_cast<std::uint64_t>(stat.czxid);
    lease.mode = request.mode;
    lease.limit = request.limit;
    lease.ttl = session.negotiated_timeout();
    lease.confirmed_at = session.lease_start();
    return lease;
  }

  BackendConfig m_config;
  std::string m_label;
  std::vector<net::Address> m_addresses;
  std::string m_hosts;
  std::string m_base;
  std::optional<std::string> m_digest;
  bool m_containers = true;
  bool m_numeric = false; // every address in the URL is an IP address
  std::unique_ptr<Session> m_session;
  std::map<LeaseKey, Held> m_held; // by name and release token
};

} // namespace

std::unique_ptr<Backend> create_zookeeper_backend(const BackendConfig &config) {
  return std::make_unique<ZooKeeperBackend>(config);
}

} // namespace dlock::backend::zookeeper
