#include "backend/redis/redlock_backend.hpp"

#include "backend/redis/common.hpp"
#include "backend/redis/connection.hpp"
#include "backend/redis/diagnose.hpp"
#include "backend/redis/nodes.hpp"
#include "backend/redis/queue.hpp"
#include "backend/redis/redlock_scripts.hpp"
#include "backend/redis/redlock_shared.hpp"
#include "backend/redis/scripts.hpp"
#include "backend/redis/server_scripts.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <random>
#include <unistd.h>

namespace dlock::backend::redis {

namespace {

class RedlockBackend : public Backend {
public:
  explicit RedlockBackend(const BackendConfig &config)
      : m_config(config), m_label(config.url.redacted()),
        m_random(static_cast<unsigned>(getpid()) ^
                 static_cast<unsigned>(SteadyClock::now().time_since_epoch().count())) {
    const Url &url = config.url;
    std::map<std::string, std::string> query = url.query;
    ConnectionOptions options = connection_options(config, query, url.scheme == "redlocks");
    if (url.path.size() > 1) options.db = parse_db(url.path.substr(1), m_label);
    if (!query.empty())
      throw ConfigError(
          fmt::format("{}: unknown URL option '{}' (known for {}: {})", m_label, query.begin()->first, url.scheme,
                      url.scheme == "redlocks" ? "cacert, cert, key, insecure" : "none; TLS options need redlocks://"));
    std::vector<Address> addresses;
    for (const auto &host : url.hosts)
      if (!host.empty()) addresses.push_back(parse_address(host, k_default_port));
    if (addresses.size() < 3)
      throw ConfigError(fmt::format("{}: Redlock needs at least 3 independent Redis servers (it has {}); for one "
                                    "server use redis://",
                                    m_label, addresses.size()));
    for (std::size_t i = 0; i < addresses.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (addresses[i].display() == addresses[j].display())
          throw ConfigError(
              fmt::format("{}: {} is listed twice; a quorum needs distinct servers", m_label, addresses[i].display()));
    m_nodes = std::make_unique<Nodes>(std::move(addresses), options);
  }

  AcquireResult try_acquire(const LockRequest &given) override {
    LockRequest request = one_holder(given);
    Attempt attempt = attempt_once(request, "");
    if (attempt.lease) return {AcquireOutcome::acquired, std::move(attempt.lease), 0};
    return {AcquireOutcome::busy, std::nullopt, 0};
  }

  AcquireResult acquire(const LockRequest &given, std::optional<SteadyClock::time_point> deadline,
                        const Interrupt &interrupt) override {
    LockRequest request = one_holder(given);
    Attempt attempt = attempt_once(request, "");
    if (attempt.lease) return {AcquireOutcome::acquired, std::move(attempt.lease), 0};
    Keys keys = keys_for(m_config.lock_namespace, request.name);
    // The waiter listens on its own channel on every node before it joins
    // their queues (its next attempt), so that a wake-up is in its socket,
    // not lost; a release wakes the head of each node's queue, not every
    // waiter (redlock_scripts.hpp). Without any listener it does not join
    // (a wake-up would find nobody and drop it) and only polls.
    std::string id = random_hex(8);
    RedlockListeners listeners(*m_nodes, keys.queue + ":" + id, node_timeout(request.ttl));
    std::string joining = listeners.any() ? id : std::string();
    auto give_up = [&](AcquireResult result) {
      if (!joining.empty()) leave_queues(keys, queue_member(request, id), request.ttl);
      return result;
    };
    AwayBackoff backoff;
    for (;;) {
      if (int signo = interrupt.requested()) return give_up({AcquireOutcome::interrupted, std::nullopt, signo});
      auto now = SteadyClock::now();
      if (deadline && now >= *deadline) return give_up({AcquireOutcome::busy, std::nullopt, 0});
      try {
        attempt = attempt_once(request, joining);
        backoff.reset();
      } catch (const UnavailableError &away) {
        // No quorum for a moment (nodes restarting, a cut or slow network):
        // a waiter keeps waiting, as on a single Redis server.
        backoff.ride_out(away, request.name, deadline, interrupt);
        continue;
      }
      if (attempt.lease) return {AcquireOutcome::acquired, std::move(attempt.lease), 0};
      now = SteadyClock::now();
      if (deadline && now >= *deadline) return give_up({AcquireOutcome::busy, std::nullopt, 0});
      if (attempt.split) {
        // A split vote (this attempt won some nodes, not a majority): the
        // others took part too and take theirs back, which wakes the heads
        // of those nodes' queues. A random 5-50 ms first (Redlock's advice),
        // so that the same contenders do not collide again.
        auto retry = now + Millis(5 + m_random() % 46);
        sleep_until(deadline ? std::min(retry, *deadline) : retry, interrupt);
        continue;
      }
      // Unless woken, try again once what stands in the way could have run
      // out (a holder dead without a release, a woken waiter that did not
      // come), with jitter, and at least every 30 s, which keeps the
      // waiter's place (a node's queue ends 90 s after its last move).
      auto wake = retry_at(now, attempt.holder_pttl, joining.empty() ? Millis(250) : k_longest_sleep, m_random);
      if (deadline) wake = std::min(wake, *deadline);
      listeners.wait(wake, interrupt, m_random);
    }
  }

  RenewResult renew(const Lease &lease, Millis ttl, std::optional<SteadyClock::time_point> answer_by) override {
    Keys keys = keys_for(m_config.lock_namespace, lease.name);
    std::string request = format_command(redlock_command(
        is_shared_token(lease.token) ? lua::server::shared::renew.text() : std::string(lua::renew), keys,
        {lease.token, std::to_string(std::max(ttl, Millis(0)).count()), std::to_string(k_unrecorded_length.count())}));
    // Asked for the lock's own length (0), only the nodes know it: each
    // node gets the time for the length of the lease in hand, or the
    // connect timeout for one rebuilt from a token.
    Millis expected = ttl > Millis(0) ? ttl : lease.ttl;
    auto started = SteadyClock::now();
    Deadline deadline = started + (expected > Millis(0) ? node_timeout(expected) : m_config.connect_timeout);
    if (answer_by) deadline = std::min(deadline, *answer_by);
    std::size_t majority = m_nodes->majority(), n = m_nodes->size();
    auto answers = m_nodes->exchange_all(request, 1, deadline, [&](const std::vector<NodeAnswer> &so_far) {
      return count(so_far, 1) >= majority || count(so_far, 0) > n - majority;
    });
    RenewResult result;
    std::size_t confirmed = count(answers, 1), refused = count(answers, 0);
    std::vector<Millis> lengths;
    for (const auto &answer : answers)
      if (answer.answered())
        if (auto renewed = read_renew_reply(answer.replies.front()); renewed && renewed->renewed_for)
          lengths.push_back(*renewed->renewed_for);
    std::optional<Millis> length = quorum_length(lengths, majority);
    if (length && validity_after(*length, started) > Millis(0)) {
      // As for acquire: the validity counted from the send.
      result.outcome = RenewOutcome::renewed;
      result.sent_at = started;
      result.ttl = *length - drift(*length);
      return result;
    }
    if (refused > n - majority) {
      result.outcome = RenewOutcome::lost;
      result.reason = fmt::format("{} of {} nodes no longer hold the lock with this token", refused, n);
      return result;
    }
    result.outcome = RenewOutcome::unknown;
    result.reason =
        length ? "the renewal took longer than the lease"
               : fmt::format("only {} of {} nodes confirmed ({})", confirmed, n, failures(answers, granted_or_refused));
    return result;
  }

  ReleaseOutcome release(const Lease &lease) override {
    Keys keys = keys_for(m_config.lock_namespace, lease.name);
    // A lease rebuilt from a token (dlock release NAME TOKEN) has no ttl:
    // then each node gets the connect timeout.
    Millis timeout = lease.ttl > Millis(0) ? node_timeout(lease.ttl) : m_config.connect_timeout;
    auto answers = release_on(std::vector<bool>(m_nodes->size(), true), lease.token, keys, timeout);
    if (count(answers, 1) > 0) return ReleaseOutcome::released;
    // "Not the owner" needs a node that says so; with none, nothing is known.
    if (count(answers, 0) == 0)
      throw UnavailableError(fmt::format("could not release lock '{}': none of the {} nodes answered ({})", lease.name,
                                         m_nodes->size(), failures(answers, granted_or_refused)));
    return ReleaseOutcome::not_owner;
  }

  std::optional<LockStatus> force_release(const std::string &name) override {
    LockStatus before = status(name);
    Keys keys = keys_for(m_config.lock_namespace, name);
    auto answers =
        m_nodes->exchange_all(format_command(redlock_command(lua::redlock::force_release, keys, {keys.channel})), 1,
                              SteadyClock::now() + m_config.connect_timeout);
    bool any = std::any_of(answers.begin(), answers.end(), [](const NodeAnswer &answer) {
      return answer.answered() && answer.replies.front().type == Reply::Type::array;
    });
    if (!any) return std::nullopt;
    before.held = true;
    return before;
  }

  LockStatus status(const std::string &name) override {
    std::vector<bool> asked(m_nodes->size(), true);
    return status_on(name, asked);
  }

  // status() of the nodes in `asked`; a node that does not answer (it
  // costs the connect timeout) is taken out of `asked`, so that list()
  // waits for a silent node once, not once per name.
  LockStatus status_on(const std::string &name, std::vector<bool> &asked) {
    Keys keys = keys_for(m_config.lock_namespace, name);
    std::string request = format_command(redlock_command(lua::redlock::status, keys, {})) +
                          format_command({"PUBSUB", "NUMSUB", keys.channel});
    std::vector<std::string> requests;
    for (bool ask : asked)
      requests.push_back(ask ? request : std::string());
    // Every node, for the whole picture.
    auto answers = m_nodes->exchange(requests, 2, SteadyClock::now() + m_config.connect_timeout);
    for (std::size_t i = 0; i < answers.size(); ++i)
      if (!answers[i].answered()) asked[i] = false;
    return status_from_nodes(name, keys, answers);
  }

  std::vector<LockStatus> list(const std::string &prefix) override {
    std::string head = tag_head(m_config.lock_namespace);
    // A writer's lock or a reader's set: "{NS:NAME}:lock", "{NS:NAME}:readers".
    std::string pattern = glob_escape(head + prefix) + "*}:[lr]*";
    std::vector<std::string> names;
    std::vector<std::string> cursors(m_nodes->size(), "0");
    std::vector<bool> active(m_nodes->size(), true);
    std::vector<bool> answering(m_nodes->size(), true); // the nodes that have answered every request so far
    std::size_t reachable = m_nodes->size();
    // SCAN every node in step, in parallel, until each has finished.
    while (std::count(active.begin(), active.end(), true) > 0) {
      std::vector<std::string> requests;
      for (std::size_t i = 0; i < m_nodes->size(); ++i)
        requests.push_back(active[i] ? format_command({"SCAN", cursors[i], "MATCH", pattern, "COUNT", "1000"})
                                     : std::string()); // finished: not asked
      auto answers = m_nodes->exchange(requests, 1, SteadyClock::now() + m_config.connect_timeout);
      for (std::size_t i = 0; i < answers.size(); ++i) {
        if (!active[i]) continue;
        const NodeAnswer &answer = answers[i];
        if (!answer.answered() || answer.replies.front().type != Reply::Type::array ||
            answer.replies.front().elements.size() != 2) {
          active[i] = false;
          answering[i] = false;
          --reachable;
          continue;
        }
        const Reply &reply = answer.replies.front();
        cursors[i] = reply.elements[0].str;
        for (const Reply &key : reply.elements[1].elements)
          for (std::string tail : {"}:lock", "}:readers"})
            if (key.str.size() > head.size() + tail.size() && key.str.compare(0, head.size(), head) == 0 &&
                key.str.compare(key.str.size() - tail.size(), tail.size(), tail) == 0)
              names.push_back(key.str.substr(head.size(), key.str.size() - head.size() - tail.size()));
        if (cursors[i] == "0") active[i] = false;
      }
    }
    if (reachable < m_nodes->majority())
      throw UnavailableError(fmt::format("no quorum: only {} of {} nodes answered SCAN", reachable, m_nodes->size()));
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::vector<LockStatus> out;
    for (const auto &name : names)
      if (LockStatus one = status_on(name, answering); one.held) out.push_back(std::move(one));
    return out;
  }

  PingResult ping() override {
    std::string request = format_command({"PING"}) + format_command({"INFO"});
    auto started = SteadyClock::now();
    auto answers = m_nodes->exchange_all(request, 2, started + m_config.connect_timeout);
    PingResult result;
    std::size_t healthy = 0;
    for (std::size_t i = 0; i < answers.size(); ++i) {
      NodeHealth node;
      node.address = m_nodes->address(i);
      const NodeAnswer &answer = answers[i];
      if (!answer.answered()) {
        node.error = answer.error;
      } else {
        node.reachable = true;
        node.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(answer.at - started);
        PingView view = ping_view(node.address, answer.replies[1].str, true);
        node.version = view.description;
        node.error = view.error;
        if (node.error.empty()) ++healthy;
      }
      result.nodes.push_back(node);
    }
    result.quorum = healthy >= m_nodes->majority();
    result.detail = fmt::format("{} of {} nodes usable, {} needed", healthy, m_nodes->size(), m_nodes->majority());
    return result;
  }

  std::vector<Finding> diagnose(const DiagnoseOptions &options) override {
    return diagnose_nodes(*m_nodes, drift(options.ttl), m_config.connect_timeout);
  }

private:
  struct Attempt {
    std::optional<Lease> lease;
    long long holder_pttl = -1;
    bool split = false; // some nodes granted, not a majority
  };

  // Each node's share of the wait for one request: 5% of the lease, so a
  // stalled node cannot eat the validity window, but never less than a
  // round trip on a busy machine (200ms) nor more than --connect-timeout.
  Millis node_timeout(Millis ttl) const {
    return std::min(std::max(ttl / 20, Millis(200)), std::max(m_config.connect_timeout, Millis(1)));
  }

  // Redlock's validity: what is left of the lease after the time the
  // request took and an allowance for clock drift between the nodes.
  static Millis drift(Millis ttl) { return ttl / 100 + Millis(2); }
  static Millis validity_after(Millis ttl, SteadyClock::time_point started) {
    auto elapsed = std::chrono::ceil<Millis>(SteadyClock::now() - started);
    return ttl - elapsed - drift(ttl);
  }

  // How many nodes answered with integer `value` (first element of an
  // array reply, or the integer reply itself).
  static std::size_t count(const std::vector<NodeAnswer> &answers, long long value) {
    return static_cast<std::size_t>(std::count_if(answers.begin(), answers.end(), [value](const NodeAnswer &answer) {
      return answer.done && answer.error.empty() && integer_at(answer, 0) == value;
    }));
  }

  std::string failures(const std::vector<NodeAnswer> &answers) const {
    return failures(answers, [](const NodeAnswer &) { return true; });
  }

  // Why each node that gave no usable answer failed; `usable` tells the
  // replies the request expects from the others (a reply that belongs to
  // another request is named, not left out).
  template <typename Usable> std::string failures(const std::vector<NodeAnswer> &answers, Usable usable) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < answers.size(); ++i) {
      const NodeAnswer &answer = answers[i];
      if (!answer.error.empty())
        out.push_back(fmt::format("{} {}", m_nodes->address(i), short_error(answer.error, m_nodes->address(i))));
      else if (answer.replies.front().is_error())
        out.push_back(fmt::format("{} {}", m_nodes->address(i), answer.replies.front().str));
      else if (answer.done && !usable(answer))
        out.push_back(fmt::format("{} unexpected reply: not a server dlock can talk to", m_nodes->address(i)));
    }
    return fmt::format("{}", fmt::join(out, ", "));
  }

  static bool granted_or_refused(const NodeAnswer &answer) {
    long long value = integer_at(answer, 0);
    return value == 0 || value == 1;
  }

  // A node's error without "redis at ADDRESS", which is printed already:
  // "cannot connect to redis at A: Connection refused" -> "cannot connect:
  // Connection refused", "redis at A: no answer within 100ms" -> "no
  // answer within 100ms".
  static std::string short_error(std::string error, const std::string &address) {
    std::string who = "redis at " + address;
    if (auto at = error.find(who); at != std::string::npos) error.erase(at, who.size());
    if (auto at = error.find(" to : "); at != std::string::npos) error.replace(at, 6, ": ");
    auto start = error.find_first_not_of(": ");
    return start == std::string::npos ? error : error.substr(start);
  }

  // Redlock holds a lock with one writer or with readers (--shared). A
  // semaphore of N > 1 slots over several nodes is no semaphore: with 3
  // nodes and 2 slots, holders on A+B, B+C and A+C each win a majority, and
  // three jobs run at once. --limit 1 is the exclusive lock itself.
  LockRequest one_holder(const LockRequest &request) const {
    if (request.mode == HoldMode::semaphore && request.limit > 1)
      refuse_mode(request, "redlock",
                  fmt::format("the slots of a semaphore do not add up across nodes (with 3 nodes and 2 slots, holders "
                              "on A+B, B+C and A+C each win a majority: three run at once); use redis:// for --limit "
                              "{}, or --limit 1",
                              request.limit));
    if (request.mode == HoldMode::shared) return request;
    LockRequest exclusive = request;
    exclusive.mode = HoldMode::exclusive;
    exclusive.limit = 1;
    return exclusive;
  }

  // One try on every node; `id`: the waiter's id in the nodes' queues (""
  // for a try that does not wait).
  Attempt attempt_once(const LockRequest &request, const std::string &id) {
    Keys keys = keys_for(m_config.lock_namespace, request.name);
    // A reader's token says so ("rd-"): renew and release of a lease
    // rebuilt from (name, token) know the layout.
    bool reader = request.mode == HoldMode::shared;
    std::string token = reader ? new_shared_token() : random_hex(16);
    std::string command = format_command(
        redlock_command(reader ? lua::redlock::acquire_shared.text() : lua::redlock::acquire.text(), keys,
                        {token, std::to_string(request.ttl.count()), request.holder.host,
                         std::to_string(request.holder.pid), request.holder.user, request.holder.command, id}));
    std::size_t majority = m_nodes->majority(), n = m_nodes->size();
    auto started = SteadyClock::now();
    auto answers =
        m_nodes->exchange_all(command, 1, started + node_timeout(request.ttl),
                              [&](const std::vector<NodeAnswer> &so_far) { return count(so_far, 1) >= majority; });
    // (No early end on "busy": a node still answering could grant us its
    // copy of the lock after we gave up, and nobody would take it back.)
    std::size_t granted = count(answers, 1), busy = count(answers, 0);
    std::size_t failed = n - granted - busy;
    Attempt attempt;
    if (granted >= majority && validity_after(request.ttl, started) > Millis(0)) {
      // The fence (the argument is in redlock_backend.hpp): a candidate
      // from the granting majority's counters and clocks, accepted once a
      // majority stored it over a smaller counter; a node whose counter is
      // already there or beyond sends the next round higher.
      long long fence = 0;
      for (const auto &answer : answers)
        if (integer_at(answer, 0) == 1) fence = std::max({fence, integer_at(answer, 1), integer_at(answer, 2)});
      ++fence;
      std::vector<NodeAnswer> stored_answers;
      bool stored = false;
      for (int round = 0; round < 3 && !stored && validity_after(request.ttl, started) > Millis(0); ++round) {
        std::string store =
            format_command(redlock_command(lua::redlock::store_fence, keys, {std::to_string(fence), token}));
        stored_answers = m_nodes->exchange_all(store, 1, SteadyClock::now() + node_timeout(request.ttl),
                                               [&](const std::vector<NodeAnswer> &so_far) {
                                                 return count(so_far, 1) >= majority || count(so_far, 0) > n - majority;
                                               });
        stored = count(stored_answers, 1) >= majority;
        if (stored) break;
        for (const auto &answer : stored_answers)
          if (integer_at(answer, 0) == 0) fence = std::max(fence, integer_at(answer, 1) + 1);
      }
      if (stored && validity_after(request.ttl, started) > Millis(0)) {
        // The validity counted from the send: every granting node's copy
        // lives at least ttl from then, less the drift allowance.
        Lease lease;
        lease.name = request.name;
        lease.token = token;
        lease.fence = static_cast<std::uint64_t>(fence);
        lease.ttl = request.ttl - drift(request.ttl);
        lease.confirmed_at = started;
        lease.mode = request.mode;
        attempt.lease = std::move(lease);
        return attempt;
      }
      release_on(granting(answers), token, keys, node_timeout(request.ttl), false);
      throw UnavailableError(fmt::format("no quorum: the fence was stored on {} of {} nodes, {} needed ({})",
                                         count(stored_answers, 1), n, majority, failures(stored_answers)));
    }
    // Not ours: undo what the minority granted, at once.
    if (granted > 0) release_on(granting(answers), token, keys, node_timeout(request.ttl), false);
    attempt.split = granted > 0;
    if (granted >= majority)
      throw UnavailableError(fmt::format("no quorum: {} of {} nodes granted the lock, but only after its validity "
                                         "window had passed",
                                         granted, n));
    if (granted + busy < majority) {
      // Too few nodes answered to decide anything: an outage, not a busy
      // lock (with a majority answering, a lost race or a holder is busy).
      // 77 only if every node that failed refused us: a reply that
      // answers another request is no refusal.
      bool auth = std::all_of(answers.begin(), answers.end(), [](const NodeAnswer &answer) {
        if (!answer.error.empty()) return answer.code == ExitCode::auth;
        return !answer.done || answer.replies.front().is_error() || granted_or_refused(answer);
      });
      std::string message = fmt::format("no quorum: {} of {} nodes answered, {} needed ({})", granted + busy, n,
                                        majority, failures(answers, granted_or_refused));
      if (auth && failed > 0) throw Error(ExitCode::auth, message);
      // A node that answered with an error (OOM, LOADING, BUSY) may hold a
      // copy of someone's lock: no quorum, but not out of reach.
      if (std::any_of(answers.begin(), answers.end(), [](const NodeAnswer &answer) { return answer.refused; }))
        throw AnsweredError(message);
      throw UnavailableError(message);
    }
    for (const auto &answer : answers)
      if (integer_at(answer, 0) == 0) attempt.holder_pttl = std::max(attempt.holder_pttl, integer_at(answer, 1));
    return attempt;
  }

  static std::vector<bool> granting(const std::vector<NodeAnswer> &answers) {
    std::vector<bool> out;
    for (const auto &answer : answers)
      out.push_back(integer_at(answer, 0) == 1);
    return out;
  }

  // Compare-and-delete on the chosen nodes, waiting (up to `timeout`) for a
  // majority and then briefly for the rest, so that no later request of
  // ours overtakes it on a node that is merely slower; a stalled node costs
  // only that. A node that never answered our acquire is not asked: a
  // release on a new connection could overtake that acquire anyway; its
  // copy ends with the lease.
  std::vector<NodeAnswer> release_on(const std::vector<bool> &nodes, const std::string &token, const Keys &keys,
                                     Millis timeout, bool announce = true) {
    // A partial grant is taken back quietly: announcing it would wake the
    // other contenders (and ourselves) without a lock to take.
    bool reader = is_shared_token(token);
    std::string script = announce ? (reader ? lua::server::shared::release.text() : lua::server::release.text())
                                  : (reader ? lua::redlock::take_back_shared.text() : lua::redlock::take_back.text());
    std::string request = format_command(announce ? redlock_command(script, keys, {token, keys.channel})
                                                  : redlock_command(script, keys, {token}));
    std::vector<std::string> requests;
    for (bool asked : nodes)
      requests.push_back(asked ? request : std::string());
    std::size_t wanted = std::min<std::size_t>(m_nodes->majority(), std::count(nodes.begin(), nodes.end(), true));
    auto majority_answered = [wanted](const std::vector<NodeAnswer> &so_far) {
      return static_cast<std::size_t>(std::count_if(
                 so_far.begin(), so_far.end(), [](const NodeAnswer &answer) { return answer.answered(); })) >= wanted;
    };
    return m_nodes->exchange(requests, 1, SteadyClock::now() + timeout, majority_answered, Millis(20));
  }

  LockStatus status_from_nodes(const std::string &name, const Keys &keys, const std::vector<NodeAnswer> &answers) {
    LockStatus status;
    status.name = name;
    std::map<std::string, std::vector<std::size_t>> by_token;
    std::vector<std::string> states;
    std::size_t reachable = 0;
    for (std::size_t i = 0; i < answers.size(); ++i) {
      const NodeAnswer &answer = answers[i];
      if (!answer.answered() || answer.replies.front().type != Reply::Type::array ||
          answer.replies.front().elements.size() < 4) {
        states.push_back(fmt::format("{} unreachable", m_nodes->address(i)));
        continue;
      }
      ++reachable;
      const Reply &reply = answer.replies.front();
      const std::string &token_hash = reply.elements[3].str;
      if (auto last = to_integer(reply.elements[2].str); last && *last > 0)
        status.fence = std::max(status.fence.value_or(0), static_cast<std::uint64_t>(*last));
      std::size_t readers = reply.elements.size() > 4 ? reply.elements[4].elements.size() : 0;
      if (token_hash.empty() && readers > 0) {
        states.push_back(fmt::format("{} read by {}", m_nodes->address(i), readers));
      } else if (token_hash.empty()) {
        states.push_back(fmt::format("{} free", m_nodes->address(i)));
      } else {
        by_token[token_hash].push_back(i);
        states.push_back(fmt::format("{} held", m_nodes->address(i)));
      }
      // The node's queue, and older dlocks' waiters on the old channel.
      std::int64_t waiters = reply.elements.size() > 5 ? std::max(integer_at(answer, 5), 0LL) : 0;
      const Reply &numsub = answer.replies[1];
      if (numsub.type == Reply::Type::array && numsub.elements.size() == 2) waiters += numsub.elements[1].integer;
      status.waiters = std::max<std::int64_t>(status.waiters.value_or(0), waiters);
    }
    if (reachable < m_nodes->majority())
      throw UnavailableError(fmt::format(
          "no quorum: {} of {} nodes answered, {} needed ({})", reachable, m_nodes->size(), m_nodes->majority(),
          failures(answers, [](const NodeAnswer &answer) {
            return answer.replies.front().type == Reply::Type::array && answer.replies.front().elements.size() >= 4;
          })));
    std::size_t held_on = 0;
    for (const auto &[token_hash, nodes] : by_token) {
      held_on = std::max(held_on, nodes.size());
      if (nodes.size() < m_nodes->majority()) continue;
      status.held = true;
      std::vector<long long> pttls;
      for (std::size_t i : nodes)
        pttls.push_back(integer_at(answers[i], 0));
      // The lock is held until all but a minority of these copies expire.
      std::sort(pttls.begin(), pttls.end(), std::greater<>());
      if (long long left = pttls[m_nodes->majority() - 1]; left >= 0) status.time_left = Millis(left);
      std::optional<std::uint64_t> holder_fence;
      for (std::size_t i : nodes) {
        const Reply &fields = answers[i].replies.front().elements[1];
        if (fields.elements.empty()) continue;
        if (!status.holder) status.holder = holder_from(fields);
        if (auto fence = fence_from(fields)) holder_fence = std::max(holder_fence.value_or(0), *fence);
      }
      if (holder_fence) status.fence = holder_fence;
    }
    if (status.held) {
      status.detail = fmt::format("held on {} of {} nodes ({}); key {}", held_on, m_nodes->size(),
                                  fmt::join(states, ", "), keys.lock);
      return status;
    }
    std::size_t read_on = add_majority_readers(status, answers, m_nodes->majority());
    if (status.held)
      status.detail = fmt::format("read by {} on a majority of {} nodes ({}); key {}", status.holders.size(),
                                  m_nodes->size(), fmt::join(states, ", "), keys.readers);
    else
      status.detail = fmt::format("not held by a quorum on {} of {} nodes ({}); key {}", std::max(held_on, read_on),
                                  m_nodes->size(), fmt::join(states, ", "), keys.lock);
    return status;
  }

  // A waiter that gives up leaves the nodes' queues (others may be woken
  // now); a node that does not answer drops it once a wake-up finds its
  // channel without a listener.
  void leave_queues(const Keys &keys, const std::string &member, Millis ttl) {
    m_nodes->exchange_all(format_command(redlock_command(lua::server::leave, keys, {member})), 1,
                          SteadyClock::now() + node_timeout(ttl));
  }

  BackendConfig m_config;
  std::string m_label;
  std::unique_ptr<Nodes> m_nodes;
  std::minstd_rand m_random;
};

} // namespace

std::unique_ptr<Backend> create_redlock_backend(const BackendConfig &config) {
  return std::make_unique<RedlockBackend>(config);
}

} // namespace dlock::backend::redis
