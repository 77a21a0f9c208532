#include "backend/zookeeper/semaphore.hpp"

#include "backend/zookeeper/paths.hpp"
#include "core/error.hpp"
#include "core/holder_json.hpp"
#include "core/log.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zookeeper/zookeeper.h>

#include <algorithm>

namespace dlock::backend::zookeeper {

namespace {

constexpr std::size_t k_sequence_digits = 10;
constexpr std::string_view k_lease_marker = "lease-";

std::string printable(const std::string &data) {
  std::string out;
  for (char c : data.substr(0, 64))
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

bool has_child(const std::vector<std::string> &children, std::string_view child) {
  return std::find(children.begin(), children.end(), child) != children.end();
}

// Refuses `request` (78) when a lock or a live dlock lease of the name
// says the name is held in another way: an exclusive or shared contender
// on the lock node itself, or a lease record with another N. Curator's
// lease nodes carry no N: beside them nothing can be told.
void refuse_mixing(SemaphoreHost &host, Session &session, const std::string &lock, const std::string &leases,
                   const LockRequest &request) {
  CallPtr own = session.children(lock);
  CallPtr list = session.children(leases);
  const Call &queue = host.finish(session, own, "cannot list the lock's queue");
  if (queue.rc == ZOK && !contenders(queue.children).empty())
    refuse_mode(request, "zookeeper", "the name is held or waited for as an exclusive or shared lock");
  const Call &names = host.finish(session, list, "cannot list the semaphore's leases");
  if (names.rc == ZNONODE) return;
  if (names.rc != ZOK) session.fail(names.rc, fmt::format("cannot list {}", leases));
  std::vector<CallPtr> reads;
  for (const auto &lease : lease_nodes(names.children))
    reads.push_back(session.get(leases + "/" + lease.node));
  for (const auto &call : reads) {
    const Call &got = host.finish(session, call, "cannot read a lease node");
    if (got.rc != ZOK) continue; // gone meanwhile
    if (auto limit = record_limit(got.value); limit && *limit != request.limit)
      refuse_mode(request, "zookeeper", fmt::format("a dlock holder has it as a semaphore with --limit {}", *limit));
  }
}

// Creates our lease node (and the parents it needs); returns its path and stat.
std::pair<std::string, NodeStat> create_lease(SemaphoreHost &host, Session &session, const std::string &leases,
                                              const LockRequest &request) {
  std::string prefix = new_lease_prefix();
  std::string data = encode_lease_record(request.holder, request.limit);
  for (int attempt = 0; attempt < 5; ++attempt) {
    CallPtr create =
        session.create(leases + "/" + prefix, data, ZOO_EPHEMERAL_SEQUENTIAL, session.options().digest.has_value());
    const Call &made = host.finish(session, create, "cannot create our lease node");
    if (made.rc == ZOK) {
      session.note_confirmed(made.sent_at);
      return {made.value, made.stat};
    }
    if (made.rc == ZNONODE) {
      host.create_parents(session, leases);
      continue;
    }
    if (made.rc != ZCONNECTIONLOSS) session.fail(made.rc, fmt::format("cannot create a lease node in {}", leases));
    // Unknown whether it was made: the protected name finds it.
    if (!session.wait_connected(SteadyClock::now() + session.options().connect_timeout))
      throw UnavailableError(
          fmt::format("{}: lost the connection while creating a lease node in {}", session.options().label, leases));
    CallPtr listing = session.children(leases);
    const Call &list = host.finish(session, listing, "cannot list the semaphore's leases");
    if (list.rc != ZOK) continue;
    for (const auto &child : list.children) {
      if (child.rfind(prefix, 0) != 0) continue;
      std::string path = leases + "/" + child;
      CallPtr stat = session.exists(path);
      const Call &mine = host.finish(session, stat, "cannot read our lease node");
      if (mine.rc == ZOK) return {path, mine.stat};
    }
  }
  throw UnavailableError(fmt::format("{}: could not create a lease node in {}", session.options().label, leases));
}

enum class Waited { changed, busy, interrupted };

// Waits (holding the mutex, as Curator does) until the children of
// `leases` change, the deadline passes or a signal comes. Every T/5 our
// node is confirmed through the leader, so the lease handed out at the end
// starts fresh.
Waited wait_for_leases(Session &session, const std::string &leases, const std::string &own,
                       std::optional<SteadyClock::time_point> deadline, const Interrupt &interrupt, int &signal,
                       const std::string &label) {
  Millis interval = session.negotiated_timeout() / 5;
  auto next_check = session.latest_confirmation() + interval;
  Millis round_trip = session.options().connect_timeout;
  CallPtr check;
  for (;;) {
    if ((signal = interrupt.requested()) != 0) return Waited::interrupted;
    auto now = SteadyClock::now();
    if (deadline && now >= *deadline) return Waited::busy;
    if (session.expired())
      throw UnavailableError(fmt::format("{}: the ZooKeeper session expired while waiting", label));
    for (const auto &event : session.take_node_events())
      if (event.path == leases) return Waited::changed;
    if (check && !check->done() && now >= check->sent_at + round_trip) check.reset();
    if (check && check->done()) {
      if (check->rc == ZOK)
        session.note_confirmed(check->sent_at);
      else if (check->rc == ZNONODE)
        throw UnavailableError(fmt::format("{}: our lease node {} was deleted while waiting", label, own));
      next_check = std::max(session.latest_confirmation() + interval, now + Millis(100));
      check.reset();
    }
    if (!check && now >= next_check) check = session.confirm(own);
    auto until = next_check;
    if (check) until = std::max(now + Millis(1), check->sent_at + round_trip);
    if (deadline) until = std::min(until, *deadline);
    session.wait_event(until, interrupt.fd(), check.get());
  }
}

} // namespace

std::optional<std::uint64_t> lease_sequence(std::string_view child) {
  if (child.size() < k_lease_marker.size() + k_sequence_digits) return std::nullopt;
  std::string_view head = child.substr(0, child.size() - k_sequence_digits);
  if (head.substr(head.size() - k_lease_marker.size()) != k_lease_marker) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : child.substr(child.size() - k_sequence_digits)) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

std::vector<LeaseNode> lease_nodes(const std::vector<std::string> &children) {
  std::vector<LeaseNode> out;
  for (const auto &child : children)
    if (auto sequence = lease_sequence(child)) out.push_back({child, *sequence});
  std::sort(out.begin(), out.end(), [](const LeaseNode &a, const LeaseNode &b) {
    return a.sequence != b.sequence ? a.sequence < b.sequence : a.node < b.node;
  });
  return out;
}

std::string new_lease_prefix() {
  // new_node_prefix() ends in "-lock-": the same protected uuid, Curator's "lease-" instead.
  std::string prefix = new_node_prefix(HoldMode::exclusive);
  return prefix.substr(0, prefix.size() - std::string_view("lock-").size()) + std::string(k_lease_marker);
}

std::string encode_lease_record(const HolderInfo &holder, unsigned limit) {
  nlohmann::json doc;
  doc["dlock"] = 1;
  add_holder(doc, holder);
  doc["limit"] = limit;
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<unsigned> record_limit(const std::string &data) {
  if (data.empty() || data.front() != '{') return std::nullopt;
  auto doc = nlohmann::json::parse(data, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("dlock")) return std::nullopt;
  auto limit = doc.find("limit");
  if (limit == doc.end() || !limit->is_number_unsigned()) return std::nullopt;
  auto value = limit->get<std::uint64_t>();
  if (value < 1 || value > max_limit) return std::nullopt;
  return static_cast<unsigned>(value);
}

bool holds_lease(const std::vector<LeaseNode> &leases, std::string_view own, unsigned limit) {
  bool present = std::any_of(leases.begin(), leases.end(), [&](const LeaseNode &lease) { return lease.node == own; });
  return present && leases.size() <= limit;
}

LockStatus semaphore_status(const std::string &name, const std::vector<LeaseNode> &leases,
                            const std::vector<LeaseData> &data) {
  LockStatus status;
  status.name = name;
  if (leases.empty()) return status; // free: as an exclusive lock's
  status.held = true;
  status.mode = HoldMode::semaphore;
  for (const auto &node : data)
    if ((status.limit = record_limit(node.data))) break;
  std::size_t holders = status.limit ? std::min<std::size_t>(*status.limit, leases.size()) : leases.size();
  for (std::size_t i = 0; i < holders && i < data.size(); ++i) {
    HolderStatus holder;
    holder.fence = static_cast<std::uint64_t>(data[i].czxid);
    if (auto info = decode_holder(data[i].data)) {
      holder.info = *info;
    } else {
      // Another client's lease (Curator stores an address).
      holder.info.host = data[i].data.empty() ? "?" : printable(data[i].data);
      holder.info.command = fmt::format("node {} of another client", leases[i].node);
      holder.info.since = std::chrono::system_clock::time_point(std::chrono::milliseconds(data[i].ctime_ms));
    }
    status.holders.push_back(std::move(holder));
  }
  status.waiters = static_cast<std::int64_t>(leases.size() - holders);
  status.detail = fmt::format("{} lease node{} from {}{}", leases.size(), leases.size() == 1 ? "" : "s",
                              leases.front().node, status.limit ? "" : " (N unknown: no dlock holder)");
  return status;
}

AcquireResult take_semaphore(SemaphoreHost &host, const std::string &lock, const LockRequest &request, bool wait,
                             std::optional<SteadyClock::time_point> deadline, const Interrupt *interrupt) {
  std::string leases = lock + "/" + std::string(k_leases_child);
  // The mutex P/locks: the backend's own exclusive lock of NAME/locks.
  LockRequest mutex = request;
  mutex.name = request.name + "/" + std::string(k_locks_child);
  mutex.mode = HoldMode::exclusive;
  mutex.limit = 1;
  AcquireResult taken = host.take(mutex, wait, deadline, interrupt);
  if (taken.outcome != AcquireOutcome::acquired) return taken;
  Lease held_mutex = *taken.lease;
  // Let go in every path; a failure to delete it ends with our session.
  auto let_go = [&] {
    try {
      host.release(held_mutex);
    } catch (const Error &failure) {
      detail(1, "could not release the mutex of '{}': {}", request.name, failure.what());
    }
  };
  Session &session = host.session(request.ttl);
  std::string own_path;
  AcquireResult result{AcquireOutcome::acquired, std::nullopt, 0};
  try {
    refuse_mixing(host, session, lock, leases, request);
    auto [path, stat] = create_lease(host, session, leases, request);
    own_path = path;
    std::string own = own_path.substr(own_path.rfind('/') + 1);
    for (;;) {
      session.take_node_events();
      CallPtr listing = session.children(leases, true);
      const Call &list = host.finish(session, listing, "cannot list the semaphore's leases");
      if (list.rc != ZOK) session.fail(list.rc, fmt::format("cannot list {}", leases));
      auto nodes = lease_nodes(list.children);
      if (std::none_of(nodes.begin(), nodes.end(), [&](const LeaseNode &n) { return n.node == own; }))
        throw UnavailableError(fmt::format("{}: our lease node {} is gone (session expired or node deleted)",
                                           session.options().label, own_path));
      if (holds_lease(nodes, own, request.limit)) break;
      if (!wait) {
        result.outcome = AcquireOutcome::busy;
        break;
      }
      Waited waited =
          wait_for_leases(session, leases, own_path, deadline, *interrupt, result.signal, session.options().label);
      if (waited == Waited::changed) {
        detail(1, "waiting for '{}': the leases changed", request.name);
        continue;
      }
      result.outcome = waited == Waited::busy ? AcquireOutcome::busy : AcquireOutcome::interrupted;
      break;
    }
    if (result.outcome == AcquireOutcome::acquired) {
      result.lease = host.hold(session, request, own_path, stat);
    } else {
      host.leave(session, own_path);
    }
  } catch (...) {
    if (!own_path.empty()) host.leave(session, own_path);
    let_go();
    throw;
  }
  let_go();
  return result;
}

LockStatus inspect_semaphore(SemaphoreHost &host, Session &session, const std::string &lock, const std::string &name,
                             std::vector<std::string> *holder_paths) {
  std::string leases = lock + "/" + std::string(k_leases_child);
  for (int attempt = 0; attempt < 5; ++attempt) {
    CallPtr listing = session.children(leases);
    CallPtr queue = session.children(lock + "/" + std::string(k_locks_child));
    const Call &list = host.finish(session, listing, "cannot list the semaphore's leases");
    if (list.rc == ZNONODE) return semaphore_status(name, {}, {});
    if (list.rc != ZOK) session.fail(list.rc, fmt::format("cannot list {}", leases));
    auto nodes = lease_nodes(list.children);
    std::vector<CallPtr> reads;
    for (const auto &node : nodes)
      reads.push_back(session.get(leases + "/" + node.node));
    std::vector<LeaseData> data;
    bool gone = false;
    for (const auto &call : reads) {
      const Call &got = host.finish(session, call, "cannot read a lease node");
      if (got.rc == ZNONODE)
        gone = true;
      else if (got.rc != ZOK)
        session.fail(got.rc, "cannot read a lease node");
      else
        data.push_back({got.value, got.stat.czxid, got.stat.ctime_ms});
    }
    if (gone) continue; // a holder let go meanwhile: look again
    LockStatus status = semaphore_status(name, nodes, data);
    for (std::size_t i = 0; holder_paths && i < status.holders.size(); ++i)
      holder_paths->push_back(leases + "/" + nodes[i].node);
    // Waiting in the mutex's queue, behind the one that waits in leases/.
    const Call &mutex = host.finish(session, queue, "cannot list the semaphore's mutex");
    if (status.held && mutex.rc == ZOK) {
      auto waiting = static_cast<std::int64_t>(contenders(mutex.children).size());
      if (*status.waiters > 0) --waiting;
      *status.waiters += std::max<std::int64_t>(waiting, 0);
    }
    return status;
  }
  return semaphore_status(name, {}, {});
}

std::optional<LockStatus> break_semaphore(SemaphoreHost &host, Session &session, const std::string &lock,
                                          const std::string &name) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<std::string> paths;
    LockStatus status = inspect_semaphore(host, session, lock, name, &paths);
    if (!status.held) return std::nullopt;
    std::vector<CallPtr> removals;
    for (const auto &path : paths)
      removals.push_back(session.remove(path));
    bool removed = false;
    for (std::size_t i = 0; i < removals.size(); ++i) {
      const Call &call = host.finish(session, removals[i], "cannot delete a holder's lease node");
      if (call.rc != ZOK && call.rc != ZNONODE)
        session.fail(call.rc, fmt::format("cannot delete the lease node {}", paths[i]));
      removed = removed || call.rc == ZOK;
    }
    if (removed) return status;
    // The holders let go meanwhile: look again.
  }
  return std::nullopt;
}

void add_semaphores(SemaphoreHost &host, Session &session, const std::string &base,
                    const std::vector<std::string> &names, std::vector<LockStatus> &out) {
  // A semaphore's mutex (NAME/locks) is part of it, not a lock of its own.
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const LockStatus &status) {
                             return std::any_of(names.begin(), names.end(), [&](const std::string &name) {
                               return status.name == name + "/" + std::string(k_locks_child);
                             });
                           }),
            out.end());
  for (const auto &name : names) {
    bool listed = std::any_of(out.begin(), out.end(), [&](const LockStatus &status) { return status.name == name; });
    if (listed) continue;
    LockStatus status = inspect_semaphore(host, session, lock_path(base, name), name);
    if (status.held) out.push_back(std::move(status));
  }
  std::sort(out.begin(), out.end(), [](const LockStatus &a, const LockStatus &b) { return a.name < b.name; });
}

void refuse_beside_semaphore(SemaphoreHost &host, Session &session, const std::string &lock,
                             const std::vector<std::string> &children, const LockRequest &request) {
  if (!has_child(children, k_leases_child)) return;
  std::string leases = lock + "/" + std::string(k_leases_child);
  CallPtr listing = session.children(leases);
  const Call &list = host.finish(session, listing, "cannot list the semaphore's leases");
  if (list.rc == ZOK && !lease_nodes(list.children).empty())
    refuse_mode(request, "zookeeper", "the name is held as a semaphore (--limit N)");
}

} // namespace dlock::backend::zookeeper
