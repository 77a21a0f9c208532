#pragma once

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "runner/events.hpp"
#include "runner/timeline.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dlock::runner {

struct RunOptions {
  backend::LockRequest request;
  std::optional<Millis> wait = Millis(0); // nullopt: wait forever
  std::vector<std::string> command;
  Millis kill_after{5000};
  // The grace after a confirmed loss (someone else may already hold the
  // lock): at most kill_after, see lost_kill_at().
  Millis lost_kill_after{1000};
  std::optional<Millis> max_runtime;
  int conflict_exit_code = 75;
  int lost_exit_code = 76;
  bool quiet = false;
  std::string public_backend_url; // DLOCK_BACKEND for the child: no credentials
  // Drop to the lowest priority once the lock is released (the process is
  // about to exit, and a woken waiter should get the CPU first).
  bool yield_after_release = false;
  // --min-hold D: the lock stays held until D after it was taken, however
  // soon the job ends.
  std::optional<Millis> min_hold;
  // --if-unavailable: what a run does when the backend cannot be reached
  // (69) while it takes the lock: fail (exit 69), run the job without the
  // lock, or skip it (exit as busy, --conflict-exit-code). Always said on
  // stderr and recorded, even with -q.
  enum class IfUnavailable { fail, run, skip };
  IfUnavailable if_unavailable = IfUnavailable::fail;
  EventSink *events = nullptr; // --log, --metrics-file; may be null
};

// Lets tests see what the runner did and when.
class RunObserver {
public:
  virtual ~RunObserver() = default;
  virtual void on_acquired(const backend::Lease &) {}
  virtual void on_child_started(pid_t) {}
  virtual void on_signal_sent(int /*signo*/, SteadyClock::time_point) {}
};

// `dlock run`: starts the guard (runner/guard.hpp), takes the lock, runs the
// command while a heartbeat renews the lease, enforces the safety timeline,
// forwards signals, waits until every descendant is gone, releases with
// compare-and-delete, and returns the exit status for dlock (the child's,
// 128+N, conflict, lost or 124).
int run_locked(backend::Backend &backend, const RunOptions &options, RunObserver *observer = nullptr);

// The backend could not be reached (`failure`, exit code 69) while a run
// took the lock: fails, skips or runs the job without the lock, as
// options.if_unavailable says, and records the event. Called by
// run_locked, and by the CLI when the backend cannot even be opened.
int run_unavailable(const RunOptions &options, const Error &failure, std::optional<Millis> waited);

// How a name held by several holders at once (the readers of --shared,
// the slots of --limit N) is summed up wherever dlock names its holders
// (a busy run, list, release --force): "3 readers", "2 holders of 3 slots"
// ("2 holders" where the backend does not store N), then, `with_first`,
// ", the first pid 42 on web1": the longest-standing one where the backend
// dates them. "" when the name has one holder or none.
std::string holders_summary(const backend::LockStatus &status, bool with_first = true);

// " (held by pid 42 on web1 as ops, 'backup.sh')", " (held by 3 readers,
// the first pid 42 on web1)" or "" when unknown.
std::string describe_holder(backend::Backend &backend, const std::string &name);

// "lock 'x' is busy (held by ...); gave up after 5s": `holder` comes from
// describe_holder().
std::string busy_message(const std::string &name, const std::string &holder, std::optional<Millis> wait);

// One attempt when `wait` is 0, else waits until it passes (nullopt:
// forever) or a forwarded signal arrives.
backend::AcquireResult take_lock(backend::Backend &backend, const backend::LockRequest &request,
                                 std::optional<Millis> wait);

// Takes the lock per options.wait, printing the busy message unless quiet.
// Returns the lease, or the exit status to end with (busy / interrupted).
struct Acquisition {
  std::optional<backend::Lease> lease;
  int exit_status = 0;
  backend::AcquireOutcome outcome = backend::AcquireOutcome::busy;
  int signal = 0; // interrupted by it
};
Acquisition acquire_for(backend::Backend &backend, const backend::LockRequest &request, std::optional<Millis> wait,
                        int conflict_exit_code, bool quiet);

} // namespace dlock::runner
