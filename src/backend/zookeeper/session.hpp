#pragma once

#include "net/net.hpp"

#include "core/duration.hpp"
#include "core/unique_fd.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct _zhandle;

namespace dlock::backend::zookeeper {

using SteadyClock = std::chrono::steady_clock;

// The parts of a znode's Stat that the lock recipe reads.
struct NodeStat {
  std::int64_t czxid = 0;
  std::int64_t ctime_ms = 0;
  std::int64_t ephemeral_owner = 0;
  std::int32_t version = 0;
};

// One asynchronous request. The client library's completion thread fills
// it in; the thread that sent it reads it once done() is true. Requests
// from one session are answered in the order they were sent, so a batch
// sent back to back costs one round trip.
struct Call {
  std::atomic<bool> finished{false};
  int rc = 0; // ZOK or a ZooKeeper error code
  NodeStat stat;
  std::string value;                 // get: the data; create: the created path
  std::vector<std::string> children; // children
  std::shared_ptr<void> scratch;     // what the client fills in at completion (multi results)
  SteadyClock::time_point sent_at{};
  int notify_fd = -1;
  bool done() const { return finished.load(std::memory_order_acquire); }
};
using CallPtr = std::shared_ptr<Call>;

struct SessionOptions {
  std::string hosts;                   // "h1:p1,h2:p2", as the C client takes it
  std::vector<net::Address> addresses; // the same, parsed
  Millis session_timeout{30'000};
  Millis connect_timeout{2000};
  std::optional<std::string> digest; // "user:password" for the digest scheme
  std::string label;                 // the redacted URL, for messages
  bool refusal_is_final = false;     // every host refused the connection: fail now, not at the timeout
};

// A ZooKeeper session through the multi-threaded C client. The client's own
// threads keep the session alive (pings at a third of the timeout) and move
// it to another server when one goes away; every wait here is bounded by a
// deadline of ours, because the client's synchronous calls have none. The
// client threads run with every signal blocked, so signals reach dlock's
// own threads only.
class Session {
public:
  // Connects and waits (at most connect_timeout) until the session is
  // established; throws dlock::Error (69, or 77 when the server refuses the
  // credentials) otherwise.
  explicit Session(const SessionOptions &options);
  ~Session();
  Session(const Session &) = delete;
  // Ends the session: the server deletes its ephemeral nodes as part of
  // it. Returns the client's result (ZOK: the server confirmed). Nothing
  // else may be called afterwards.
  int close();
  Session &operator=(const Session &) = delete;

  const SessionOptions &options() const { return m_options; }
  // T: the session timeout the server negotiated.
  Millis negotiated_timeout() const;
  std::int64_t id() const;
  bool expired() const { return m_expired.load(); }
  bool connected() const;

  // Readable after a watch event or a session state change (completions
  // have their own descriptor); drain_news() empties it.
  int news_fd() const { return m_news.get(); }
  void drain_news() const;

  CallPtr create(const std::string &path, const std::string &data, int flags, bool restricted);
  // Creates the nodes `paths` (all with `data` and `flags`) in one
  // transaction (a multi): all of them or none. Sequential nodes made so
  // get adjacent sequence numbers, with no other node's between them.
  // children: the created paths, in order.
  CallPtr create_all(const std::vector<std::string> &paths, const std::string &data, int flags, bool restricted);
  // Deletes `paths` (any version) in one transaction: all or none.
  CallPtr remove_all(const std::vector<std::string> &paths);
  CallPtr remove(const std::string &path, int version = -1);
  CallPtr exists(const std::string &path, bool watch = false);
  CallPtr get(const std::string &path, bool watch = false);
  CallPtr children(const std::string &path, bool watch = false);
  // A write that changes nothing: a multi with one version check of `path`
  // (any version). Like every write it is committed by a quorum through the
  // current leader, so its answer shows our session alive in the leader's
  // view. A member cut off from its leader cannot answer it, nor can a
  // leader that lost its quorum (a sync or a read either could: a leader
  // answers a sync by itself). rc is ZNONODE if the node is gone.
  CallPtr confirm(const std::string &path) { return confirm(std::vector<std::string>{path}); }
  // The same with a check of each of `paths`: ZNONODE if one is gone.
  CallPtr confirm(const std::vector<std::string> &paths);

  // The lease that the leader's view of this session guarantees. The leader
  // expires a session T after the last request of it that it heard of, and
  // a member reports its clients' requests to the leader only in its
  // answers to the leader's pings (every tickTime/2). A write committed
  // through the leader shows the session alive there, but
  // the member may be cut off before its next ping answer: the leader then
  // counts from an earlier request. So a confirmation at t counts from the
  // last one sent at least T/3 before it (ZooKeeper negotiates T >= 2
  // tickTime, so a ping came in between), or from the session's creation,
  // which the leader itself timed.
  //
  // note_confirmed: a write sent at `sent_at` (our node's creation, a
  // confirm()) succeeded.
  void note_confirmed(SteadyClock::time_point sent_at);
  // t0 of the safety timeline after the latest confirmation.
  SteadyClock::time_point lease_start() const;
  // The send time of the latest confirmation (the session's creation if none).
  SteadyClock::time_point latest_confirmation() const;

  // Waits until `call` is done, `deadline` passes or `interrupt_fd` (may be
  // -1) becomes readable. Returns whether it is done.
  bool wait(const Call &call, SteadyClock::time_point deadline, int interrupt_fd = -1) const;
  // The deadline of one round trip sent now.
  SteadyClock::time_point round_trip_deadline() const { return SteadyClock::now() + m_options.connect_timeout; }

  // Watch events on nodes since the last call.
  struct NodeEvent {
    std::string path;
    bool deleted = false; // else created, changed or children changed
  };
  std::vector<NodeEvent> take_node_events();
  // Waits for a watch event, a session change, `deadline`, the interrupt
  // or (when given) the completion of `call`.
  void wait_event(std::optional<SteadyClock::time_point> deadline, int interrupt_fd, const Call *call = nullptr) const;

  // After a lost connection: waits (bounded) until the client is connected
  // again. False if it is not (or the session expired).
  bool wait_connected(SteadyClock::time_point deadline, int interrupt_fd = -1) const;

  // Throws the dlock::Error that `rc` means for an operation on `what`.
  [[noreturn]] void fail(int rc, const std::string &what) const;

private:
  static void on_watch(_zhandle *zh, int type, int state, const char *path, void *context);
  CallPtr start();
  SessionOptions m_options;
  UniqueFd m_event; // completions
  UniqueFd m_news;  // watch events and session state changes
  _zhandle *m_handle = nullptr;
  std::atomic<int> m_state{0};
  std::atomic<bool> m_expired{false};
  mutable std::atomic<bool> m_stalled{false}; // the last wait for an answer gave up
  mutable std::mutex m_mutex;
  std::vector<NodeEvent> m_node_events;
  SteadyClock::time_point m_created_at;            // the connection attempt began
  std::deque<SteadyClock::time_point> m_confirmed; // ascending
};

// The ZooKeeper error name of `rc`, e.g. "connection loss".
std::string describe(int rc);

} // namespace dlock::backend::zookeeper
