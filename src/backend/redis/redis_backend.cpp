#include "backend/redis/redis_backend.hpp"

#include "backend/redis/common.hpp"
#include "backend/redis/connection.hpp"
#include "backend/redis/diagnose.hpp"
#include "backend/redis/nodes.hpp"
#include "backend/redis/queue.hpp"
#include "backend/redis/scripts.hpp"
#include "backend/redis/server_scripts.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <poll.h>
#include <random>
#include <unistd.h>

namespace dlock::backend::redis {

namespace {

constexpr int k_default_sentinel_port = 26379;

// The sentinels disowned the server that just granted a lock: a failover
// is under way (69 where nobody waits).
class Disowned : public UnavailableError {
public:
  using UnavailableError::UnavailableError;
};

class RedisBackend : public Backend {
public:
  explicit RedisBackend(const BackendConfig &config) : m_config(config), m_label(config.url.redacted()) {
    const Url &url = config.url;
    std::string path = url.path;
    std::map<std::string, std::string> query = url.query;
    m_options = connection_options(config, query, url.scheme == "rediss");
    if (url.scheme == "redis+unix") {
      if (!url.hosts.empty() && !url.hosts.front().empty())
        throw ConfigError(fmt::format("{}: a unix socket URL has no host: redis+unix:///path/to/redis.sock", m_label));
      if (path.empty() || path == "/")
        throw ConfigError(fmt::format("{}: no socket path: redis+unix:///path/to/redis.sock", m_label));
      m_address.socket_path = path;
      if (auto db = take_option(query, "db")) m_options.db = parse_db(*db, m_label);
    } else if (url.scheme == "redis-sentinel") {
      if (url.hosts.empty()) throw ConfigError(fmt::format("{}: no sentinel address", m_label));
      for (const auto &host : url.hosts)
        m_sentinels.push_back(parse_address(host, k_default_sentinel_port));
      std::string rest = path.empty() ? "" : path.substr(1);
      auto slash = rest.find('/');
      m_master_name = rest.substr(0, slash);
      if (m_master_name.empty())
        throw ConfigError(fmt::format("{}: no master name: redis-sentinel://HOST:PORT[,...]/MASTER[/DB]", m_label));
      if (slash != std::string::npos && slash + 1 < rest.size())
        m_options.db = parse_db(rest.substr(slash + 1), m_label);
    } else {
      if (url.hosts.size() > 1)
        throw ConfigError(fmt::format("{}: one Redis server per URL; for a quorum of independent servers use "
                                      "redlock://HOST1,HOST2,HOST3",
                                      m_label));
      m_address = parse_address(url.hosts.empty() || url.hosts.front().empty() ? "localhost" : url.hosts.front(),
                                k_default_port);
      if (path.size() > 1) m_options.db = parse_db(path.substr(1), m_label);
    }
    if (!query.empty()) {
      std::vector<std::string> known = {"cacert", "cert", "key", "insecure"};
      if (url.scheme == "redis+unix") known = {"db"};
      throw ConfigError(fmt::format(
          "{}: unknown URL option '{}' (known for {}: {})", m_label, query.begin()->first, url.scheme,
          url.scheme == "rediss" || url.scheme == "redis+unix" ? fmt::format("{}", fmt::join(known, ", "))
                                                               : std::string("none; TLS options need rediss://")));
    }
  }

  AcquireResult try_acquire(const LockRequest &request) override {
    Attempt attempt = attempt_once(request, acquire_command(request, keys_for(request.name), ""));
    if (attempt.lease) return {AcquireOutcome::acquired, std::move(attempt.lease), 0};
    return {AcquireOutcome::busy, std::nullopt, 0};
  }

  AcquireResult acquire(const LockRequest &request, std::optional<SteadyClock::time_point> deadline,
                        const Interrupt &interrupt) override {
    Keys keys = keys_for(request.name);
    // A free lock costs no subscription and no place in the queue. Once
    // busy, the waiter listens on its own channel before it joins the
    // queue (server_scripts.hpp): its wake-up is then already in the
    // socket, not lost, and a release finds it listening (one that finds
    // nobody drops it from the queue). Every attempt uses one token: at
    // most one of them can take the lock.
    AcquireCommand command = acquire_command(request, keys, "");
    try {
      if (Attempt first = attempt_once(request, command); first.lease)
        return {AcquireOutcome::acquired, std::move(first.lease), 0};
    } catch (const Disowned &away) {
      // A failover under way: wait for it like for any other holder.
      detail(1, "waiting on '{}': {}", request.name, away.what());
    }
    if (deadline && SteadyClock::now() >= *deadline) return {AcquireOutcome::busy, std::nullopt, 0};
    std::string id = random_hex(8);
    std::string channel = keys.queue + ":" + id;
    command = acquire_command(request, keys, id, command.token);
    auto give_up = [&](AcquireResult result) {
      try {
        main().pipeline({semaphore_command(lua::server::leave, keys, {queue_member(request, id)})});
      } catch (const Error &) { // its place ends with its listener, or with the queue
      }
      return result;
    };
    auto subscriber = std::make_unique<Connection>(master(), m_options);
    bool subscribed = subscribe(*subscriber, channel, subscriber->round_trip_deadline());
    bool pubsub = subscribed; // false: the server refuses SUBSCRIBE (an ACL): poll
    std::minstd_rand random(static_cast<unsigned>(getpid()) ^
                            static_cast<unsigned>(SteadyClock::now().time_since_epoch().count()));
    AwayBackoff backoff;
    for (;;) {
      if (int signo = interrupt.requested()) return give_up({AcquireOutcome::interrupted, std::nullopt, signo});
      Attempt attempt;
      try {
        if (pubsub && !subscribed) {
          // Under Sentinel the channel is the master's of now, asked anew.
          if (!m_sentinels.empty()) {
            forget_master();
            subscriber = std::make_unique<Connection>(master(), m_options);
          }
          subscribed = subscribe(*subscriber, channel, subscriber->round_trip_deadline());
        }
        // Without a listener the waiter does not join the queue (a wake-up
        // would find nobody and drop it): it polls, after the queue.
        attempt = attempt_once(request, subscribed ? command : acquire_command(request, keys, "", command.token));
        backoff.reset();
      } catch (const UnavailableError &away) {
        backoff.ride_out(away, request.name, deadline, interrupt);
        continue;
      }
      if (attempt.lease) return {AcquireOutcome::acquired, std::move(attempt.lease), 0};
      auto now = SteadyClock::now();
      if (deadline && now >= *deadline) return give_up({AcquireOutcome::busy, std::nullopt, 0});
      // Unless woken, try again when what stands in the way could have run
      // out (a holder dead without a release, a woken waiter that does not
      // come), with jitter; and at least every 30 s, which keeps the
      // waiter's place (the queue ends 90 s after the last waiter's move).
      // Without pub/sub this is the only wake-up.
      Millis cap = subscribed ? k_longest_sleep : Millis(250);
      auto wake = retry_at(now, attempt.holder_pttl, cap, random);
      if (deadline) wake = std::min(wake, *deadline);
      if (!subscribed) {
        sleep_until(wake, interrupt);
        continue;
      }
      try {
        // A wake-up ('turn'), the fallback time, the deadline or a signal.
        // A probe ('ping': is this waiter still there?) needs no answer;
        // 'next' (the waiters ahead have their turns) moves the fallback
        // to just after those turns could have run out.
        while (std::optional<Reply> message = subscriber->read(wake, interrupt.fd())) {
          std::string_view what = message_text(*message);
          if (what == "next") {
            wake = SteadyClock::now() + k_turn + Millis(100 + random() % 400);
            if (deadline) wake = std::min(wake, *deadline);
          } else if (what != "ping") {
            break;
          }
        }
      } catch (const UnavailableError &lost) {
        // Listening again before the next attempt, which keeps the place.
        detail(1, "waiting on '{}': {}; resubscribing", request.name, lost.what());
        subscriber->close();
        subscribed = false;
      }
    }
  }

  RenewResult renew(const Lease &lease, Millis ttl, std::optional<SteadyClock::time_point> answer_by) override {
    Keys keys = keys_for(lease.name);
    RenewResult result;
    result.sent_at = SteadyClock::now();
    std::initializer_list<std::string> args = {lease.token, std::to_string(std::max(ttl, Millis(0)).count()),
                                               std::to_string(k_unrecorded_length.count())};
    std::vector<std::string> command =
        is_semaphore_token(lease.token) ? semaphore_command(lua::server::semaphore::renew, keys, args)
        : is_shared_token(lease.token)  ? semaphore_command(lua::server::shared::renew, keys, args)
                                        : renew_command(keys, lease.token, ttl);
    Reply reply = checked(main().pipeline({command}, answer_by)[0]);
    std::optional<RenewReply> renewed = read_renew_reply(reply);
    if (!renewed) throw UnavailableError(fmt::format("{}: unexpected reply to the renew script", m_label));
    if (renewed->renewed_for) {
      // Under Sentinel a server that was master when it extended the lease
      // may have been replaced meanwhile: its extension then never reaches
      // the new master, where the lock runs out.
      if (std::string why = sentinels_disown(answer_by); !why.empty()) {
        result.reason = fmt::format("the renewal went to {}, but {}", m_address.display(), why);
        forget_master();
        return result;
      }
      result.outcome = RenewOutcome::renewed;
      result.ttl = *renewed->renewed_for;
    } else {
      result.outcome = RenewOutcome::lost;
      result.reason = "the lock is no longer held with this token (its lease ran out or it was broken)";
    }
    return result;
  }

  ReleaseOutcome release(const Lease &lease) override {
    Reply reply = checked(main().call_formatted(release_command(lease.name, lease.token)));
    return reply.expect_integer(m_label, "the release script") == 1 ? ReleaseOutcome::released
                                                                    : ReleaseOutcome::not_owner;
  }

  std::optional<LockStatus> force_release(const std::string &name) override {
    Keys keys = keys_for(name);
    // The exclusive lock, every slot of a semaphore or every reader's share.
    Reply reply = checked(main().pipeline({semaphore_command(lua::server::force_release, keys, {keys.channel})})[0]);
    if (reply.is_nil()) return std::nullopt;
    return lock_status(name, reply, keys);
  }

  LockStatus status(const std::string &name) override {
    Keys keys = keys_for(name);
    check_master();
    std::vector<Reply> replies =
        main().pipeline({semaphore_command(lua::server::status, keys, {}), {"PUBSUB", "NUMSUB", keys.channel}});
    LockStatus status = lock_status(name, checked(replies[0]), keys);
    const Reply &numsub = replies[1];
    if (numsub.type == Reply::Type::array && numsub.elements.size() == 2)
      status.waiters = status.waiters.value_or(0) + numsub.elements[1].integer;
    return status;
  }

  std::vector<LockStatus> list(const std::string &prefix) override {
    check_master();
    std::string head = tag_head();
    std::vector<std::string> names;
    // An exclusive lock has its lock key, a semaphore and readers their
    // sorted sets.
    for (std::string tail : {"}:lock", "}:sem", "}:readers"}) {
      std::string pattern = glob_escape(head + prefix) + "*" + tail;
      std::string cursor = "0";
      do {
        Reply reply = checked(main().call({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}));
        if (reply.type != Reply::Type::array || reply.elements.size() != 2)
          throw UnavailableError(fmt::format("{}: unexpected reply to SCAN", m_label));
        cursor = reply.elements[0].str;
        for (const Reply &key : reply.elements[1].elements)
          if (key.str.size() > head.size() + tail.size() && key.str.compare(0, head.size(), head) == 0)
            names.push_back(key.str.substr(head.size(), key.str.size() - head.size() - tail.size()));
      } while (cursor != "0");
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());

    std::vector<LockStatus> out;
    constexpr std::size_t k_batch = 256;
    for (std::size_t first = 0; first < names.size(); first += k_batch) {
      std::size_t last = std::min(names.size(), first + k_batch);
      std::vector<std::vector<std::string>> commands;
      std::vector<std::string> numsub = {"PUBSUB", "NUMSUB"};
      for (std::size_t i = first; i < last; ++i) {
        Keys keys = keys_for(names[i]);
        commands.push_back(semaphore_command(lua::server::status, keys, {}));
        numsub.push_back(keys.channel);
      }
      commands.push_back(numsub);
      std::vector<Reply> replies = main().pipeline(commands);
      const Reply &counts = replies.back();
      for (std::size_t i = first; i < last; ++i) {
        LockStatus status = lock_status(names[i], checked(replies[i - first]), keys_for(names[i]));
        std::size_t at = 2 * (i - first) + 1;
        if (counts.type == Reply::Type::array && at < counts.elements.size())
          status.waiters = status.waiters.value_or(0) + counts.elements[at].integer;
        if (status.held) out.push_back(std::move(status));
      }
    }
    return out;
  }

  PingResult ping() override {
    PingResult result;
    NodeHealth node;
    try {
      Connection &connection = main();
      node.address = connection.address().display();
      auto started = SteadyClock::now();
      Reply pong = checked(connection.call({"PING"}));
      node.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - started);
      if (pong.is_error()) node.error = pong.str;
      Reply info = checked(connection.call({"INFO"}));
      PingView view = ping_view(node.address, info.str, false);
      node.reachable = true;
      node.version = view.description;
      if (!view.error.empty()) node.error = view.error;
      result.detail = fmt::format("role {}; maxmemory-policy {}", view.facts.role, view.facts.eviction_policy);
      if (!m_master_name.empty()) result.detail += fmt::format("; master '{}' from sentinel", m_master_name);
    } catch (const Error &failure) {
      if (failure.code() != ExitCode::unavailable) throw;
      node.reachable = false;
      node.error = failure.what();
      if (node.address.empty()) node.address = m_sentinels.empty() ? m_address.display() : "sentinel";
    }
    result.nodes.push_back(node);
    return result;
  }

  std::vector<Finding> diagnose(const DiagnoseOptions &) override {
    Connection &connection = main();
    return server_findings(
        facts_from(connection.address().display(), connection.round_trip(facts_request(), k_fact_replies)));
  }

private:
  struct Attempt {
    std::optional<Lease> lease;
    long long holder_pttl = -1;
  };

  std::string tag_head() const { return redis::tag_head(m_config.lock_namespace); }
  Keys keys_for(const std::string &name) const { return redis::keys_for(m_config.lock_namespace, name); }

  // The acquire scripts' refusals: the name is held in another mode or
  // with another limit (78, never a wait that cannot end).
  [[noreturn]] static void refuse_held_otherwise(const LockRequest &request, const Reply &reply) {
    const Reply &what = reply.elements[1];
    if (reply.elements[0].integer == 3) refuse_mode(request, "redis", "it is held as an exclusive lock");
    if (reply.elements[0].integer == 4) refuse_mode(request, "redis", "it is held as a shared lock (--shared)");
    std::string limit = what.type == Reply::Type::integer ? std::to_string(what.integer) : what.str;
    refuse_mode(request, "redis", fmt::format("it is held as a semaphore of {} (--limit {})", limit, limit));
  }

  Attempt attempt_once(const LockRequest &request, const AcquireCommand &command) {
    Attempt attempt;
    auto sent_at = SteadyClock::now();
    Reply reply = checked(main().call_formatted(command.bytes));
    // {code, value}, and a semaphore's grant {1, fence, slot}: nothing
    // else (a reply of another request) is taken for busy or granted.
    bool granted_slot = request.mode == HoldMode::semaphore && reply.type == Reply::Type::array &&
                        !reply.elements.empty() && reply.elements[0].integer == 1;
    if (reply.type != Reply::Type::array || reply.elements.size() != (granted_slot ? 3u : 2u) ||
        reply.elements[0].type != Reply::Type::integer)
      throw UnavailableError(fmt::format("{}: unexpected reply to the acquire script", m_label));
    if (reply.elements[0].integer >= 2 && reply.elements[0].integer <= 4) refuse_held_otherwise(request, reply);
    if (reply.elements[0].integer != 1) {
      attempt.holder_pttl = reply.elements[1].integer;
      return attempt;
    }
    if (std::string why = sentinels_disown(std::nullopt); !why.empty()) {
      // Taken on a server that is no longer the master: let it go there
      // (best effort) and try again on the one the sentinels name.
      std::string message =
          fmt::format("{}: took lock '{}' on {}, but {}", m_label, request.name, m_address.display(), why);
      try {
        m_main->call_formatted(release_command(request.name, command.token));
      } catch (const Error &) {
      }
      forget_master();
      throw Disowned(message);
    }
    Lease lease;
    lease.name = request.name;
    lease.token = command.token;
    lease.fence = static_cast<std::uint64_t>(to_integer(reply.elements[1].str).value_or(0));
    lease.ttl = request.ttl;
    lease.confirmed_at = sent_at;
    lease.mode = request.mode;
    lease.limit = request.limit;
    if (granted_slot)
      if (auto slot = to_integer(reply.elements[2].str); slot && *slot >= 0 && *slot < request.limit)
        lease.slot = static_cast<unsigned>(*slot);
    attempt.lease = std::move(lease);
    return attempt;
  }

  // Turns error replies into the errors of spec.md.
  Reply checked(Reply reply) {
    // Redis 7 answers a long command from a client that has not
    // authenticated with "Protocol error: unauthenticated ..." and drops
    // the connection.
    if (reply.is_error() && reply.str.find("unauthenticated") != std::string::npos && m_main) m_main->close();
    // A replica (a master demoted by a failover) answers READONLY: under
    // Sentinel the closed connection makes main() ask the sentinels again.
    // After a protocol error the connection's state is unknown.
    if (reply.is_error() && m_main &&
        (reply.error_code() == "READONLY" || reply.str.find("READONLY") != std::string::npos ||
         reply.str.rfind("Protocol error", 0) == 0 || reply.str.rfind("ERR Protocol error", 0) == 0))
      m_main->close();
    return check_reply(std::move(reply), m_label);
  }

  // The release of an exclusive lock or of a semaphore's slot: the token
  // says which.
  std::string release_command(const std::string &name, const std::string &token) const {
    Keys keys = keys_for(name);
    std::string bytes;
    append_command(bytes, semaphore_command(is_semaphore_token(token) ? lua::server::semaphore::release
                                            : is_shared_token(token)  ? lua::server::shared::release
                                                                      : lua::server::release,
                                            keys, {token, keys.channel}));
    return bytes;
  }

  // A lock as the status script (on all ten keys) sees it, with the
  // waiters in its queue.
  static LockStatus lock_status(const std::string &name, const Reply &reply, const Keys &keys) {
    LockStatus status = status_from(name, reply, keys);
    add_semaphore_status(status, reply, keys);
    add_shared_status(status, reply, keys);
    if (reply.elements.size() > 6 && reply.elements[6].type == Reply::Type::integer && reply.elements[6].integer >= 0)
      status.waiters = reply.elements[6].integer;
    return status;
  }

  // Under Sentinel: drops the connection, so that the next request asks
  // the sentinels for the master anew.
  void forget_master() {
    if (m_sentinels.empty()) return;
    if (m_main) m_main->close();
    m_main.reset();
    m_address = {};
  }

  // Under Sentinel, after a request to m_address that changed a lease:
  // empty if the sentinels still name m_address as the master, with no
  // failover in progress; else why not (the caller then drops the
  // connection with forget_master(), so that the next request asks them
  // anew). Every sentinel of the URL is asked at once; one at least must
  // answer, and every answer must agree. The leader of a failover
  // flags it before it promotes a replica, so a lease that the old master
  // extended after the promotion never counts while the leader answers.
  std::string sentinels_disown(std::optional<Deadline> answer_by) {
    if (m_sentinels.empty()) return {};
    if (!m_sentinel_nodes) m_sentinel_nodes = std::make_unique<Nodes>(m_sentinels, sentinel_options());
    std::string request;
    append_command(request, {"SENTINEL", "master", m_master_name});
    Deadline deadline = Clock::now() + m_options.timeout;
    if (answer_by) deadline = std::min(deadline, *answer_by);
    // Once most have answered (or failed), a sentinel that is slow to
    // answer gets only a little longer: it must not hold up every renewal.
    auto most_done = [majority = m_sentinel_nodes->majority()](const std::vector<NodeAnswer> &so_far) {
      return static_cast<std::size_t>(std::count_if(so_far.begin(), so_far.end(),
                                                    [](const NodeAnswer &answer) { return answer.done; })) >= majority;
    };
    std::vector<NodeAnswer> answers = m_sentinel_nodes->exchange_all(request, 1, deadline, most_done, Millis(50));
    std::size_t agreeing = 0;
    std::string why;
    for (std::size_t i = 0; i < answers.size() && why.empty(); ++i) {
      if (!answers[i].answered()) continue;
      std::map<std::string, std::string> fields;
      const Reply &reply = answers[i].replies.front();
      for (std::size_t k = 0; k + 1 < reply.elements.size(); k += 2)
        fields[reply.elements[k].str] = reply.elements[k + 1].str;
      std::string sentinel = m_sentinel_nodes->address(i);
      if (fields["flags"].find("failover_in_progress") != std::string::npos)
        why = fmt::format("sentinel {} reports a failover of '{}' in progress", sentinel, m_master_name);
      else if (fields["ip"] != m_address.host || to_integer(fields["port"]) != m_address.port)
        why = fmt::format("sentinel {} now names {}:{} as master '{}'", sentinel, fields["ip"], fields["port"],
                          m_master_name);
      else
        ++agreeing;
    }
    if (why.empty() && agreeing == 0)
      why = fmt::format("none of the {} sentinels confirmed it as master '{}' in time", m_sentinel_nodes->size(),
                        m_master_name);
    if (!why.empty()) detail(1, "{}: {}", m_label, why);
    return why;
  }

  ConnectionOptions sentinel_options() const { return ConnectionOptions{m_options.timeout, {}, {}, 0, m_options.tls}; }

  // The address of the server to lock on: the URL's, or the master the
  // sentinels name (asked once per dlock process).
  const Address &master() {
    if (m_sentinels.empty() || !m_address.host.empty()) return m_address;
    m_address = {};
    std::vector<std::string> failures;
    for (const Address &sentinel : m_sentinels) {
      try {
        Connection connection(sentinel, sentinel_options());
        Reply reply = connection.call({"SENTINEL", "get-master-addr-by-name", m_master_name});
        if (reply.type == Reply::Type::array && reply.elements.size() == 2) {
          // The sentinel gives a bare IP (an IPv6 one without brackets)
          // and the port apart.
          const std::string &host = reply.elements[0].str;
          auto port = to_integer(reply.elements[1].str);
          if (host.empty() || host.size() > 255 || !port || *port < 1 || *port > 65535)
            throw UnavailableError(
                fmt::format("sentinel {} names master '{}' with a bad address", sentinel.display(), m_master_name));
          m_address = {};
          m_address.host = host;
          m_address.port = static_cast<int>(*port);
          m_check_role = true;
          detail(1, "sentinel {} names {} as master '{}'", sentinel.display(), m_address.display(), m_master_name);
          return m_address;
        }
        failures.push_back(fmt::format("{}: {}", sentinel.display(),
                                       reply.is_error() ? reply.str : "does not know master '" + m_master_name + "'"));
      } catch (const Error &failure) {
        failures.push_back(failure.what());
      }
    }
    throw UnavailableError(
        fmt::format("no sentinel of {} names a master '{}': {}", m_label, m_master_name, fmt::join(failures, "; ")));
  }

  Connection &main() {
    // After a failure under Sentinel, ask again who the master is: a
    // failover may have happened. (A lease the old master granted survives
    // on the new one only if it was replicated in time.)
    if (m_main && !m_main->is_open() && !m_sentinels.empty()) forget_master();
    if (!m_main) m_main = std::make_unique<Connection>(master(), m_options);
    if (m_check_role) {
      // Sentinel may name a master that has just been demoted: ask it.
      require_master(*m_main, fmt::format("{}: the sentinels name {} as master '{}', but it is a read-only replica "
                                          "(failover in progress?)",
                                          m_label, m_address.display(), m_master_name));
      m_check_role = false;
    }
    return *m_main;
  }

  // status and list read: make sure they read the master, not a replica
  // that may lag behind.
  void check_master() {
    if (!m_sentinels.empty()) return; // main() checks the sentinel's pick
    require_master(main(), fmt::format("{} is a read-only replica: locks need the master (point dlock at it, or use "
                                       "redis-sentinel://)",
                                       m_label));
  }

  // Asks ROLE; throws 69 with `message` unless the server is a master.
  void require_master(Connection &connection, const std::string &message) {
    Reply role = checked(connection.call({"ROLE"}));
    if (role.type == Reply::Type::array && !role.elements.empty() && role.elements[0].str != "master")
      throw UnavailableError(message);
  }

  BackendConfig m_config;
  std::string m_label;
  ConnectionOptions m_options;
  Address m_address;
  std::vector<Address> m_sentinels;
  std::string m_master_name;
  bool m_check_role = false;
  std::unique_ptr<Connection> m_main;
  std::unique_ptr<Nodes> m_sentinel_nodes; // under Sentinel: every sentinel of the URL, for sentinels_disown()
};

} // namespace

std::unique_ptr<Backend> create_redis_backend(const BackendConfig &config) {
  return std::make_unique<RedisBackend>(config);
}

} // namespace dlock::backend::redis
