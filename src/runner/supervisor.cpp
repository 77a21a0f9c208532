#include "runner/supervisor.hpp"

#include "core/error.hpp"
#include "core/identity.hpp"
#include "core/log.hpp"
#include "core/unique_fd.hpp"
#include "runner/child.hpp"
#include "runner/guard.hpp"
#include "runner/heartbeat.hpp"
#include "runner/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>
#include <utility>

namespace dlock::runner {

namespace {

using std::chrono::duration_cast;

void drain(int fd) {
  char buffer[64];
  while (read(fd, buffer, sizeof buffer) > 0) {
  }
}

int poll_timeout(SteadyClock::time_point now, SteadyClock::time_point wake) {
  if (wake == SteadyClock::time_point::max()) return -1;
  if (wake <= now) return 0;
  auto ms = duration_cast<std::chrono::milliseconds>(wake - now + std::chrono::microseconds(999)).count();
  return static_cast<int>(std::min<long long>(ms, 60'000));
}

class Supervisor {
public:
  Supervisor(backend::Backend &backend, const RunOptions &options, const backend::Lease &lease, Guard &guard,
             RunObserver *observer, JobLock lock, std::optional<Millis> waited)
      : m_backend(backend), m_options(options), m_lease(lease), m_guard(guard), m_observer(observer), m_lock(lock),
        m_waited(waited) {}

  int run() {
    const backend::Lease &lease = m_lease;
    std::vector<std::string> environment = {"DLOCK_NAME=" + lease.name,
                                            "DLOCK_BACKEND=" + m_options.public_backend_url};
    if (m_lock == JobLock::locked) {
      environment.push_back(fmt::format("DLOCK_FENCE={}", lease.fence));
      environment.push_back("DLOCK_TOKEN=" + lease.token);
    } else {
      environment.push_back("DLOCK_UNLOCKED=1");
    }
    if (lease.slot) environment.push_back(fmt::format("DLOCK_SLOT={}", *lease.slot));
    // The job holds the lock's descriptors too: a dlock killed with SIGKILL
    // then leaves the lock to the job and its descendants until they end.
    ChildSpec spec{m_options.command, environment, {"DLOCK_PASSWORD"}, true, m_backend.lifetime_fds(lease)};
    // Everything the supervision needs is made before the job starts: once
    // it runs, a failure could only abandon it.
    UniqueFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake) {
      int err = errno;
      m_backend.release(lease);
      throw resource_error("cannot create an eventfd", err);
    }
    try {
      SpawnedChild child = spawn_child(spec);
      m_child = child.pid;
      m_took_terminal = child.took_terminal;
    } catch (const Error &) {
      m_backend.release(lease);
      throw;
    }
    m_guard.job_started(m_child, guard_kill_at(lease.confirmed_at, lease.ttl));
    m_guarded_t0 = lease.confirmed_at;
    m_started = SteadyClock::now();
    m_started_wall = std::chrono::system_clock::now();
    if (m_observer) m_observer->on_child_started(m_child);
    // After the start, so that the record never delays the job.
    if (m_lock == JobLock::locked)
      record({EventKind::acquired, lease.name, m_started_wall, lease.fence, m_waited, {}, {}, {}, {}, {}, {}});
    Signals::clear_stop();

    Heartbeat heartbeat(m_backend, lease, m_options.request.ttl, m_options.kill_after, wake.get());
    supervise(heartbeat, wake.get());
    // Every descendant is reaped: the guard must not kill a process group
    // whose number could be reused from now on.
    m_guard.job_ended();
    m_ended_wall = std::chrono::system_clock::now();
    m_ended = SteadyClock::now();
    restore_terminal(m_took_terminal);
    if (m_options.min_hold) {
      judge_unobserved_end(heartbeat.snapshot());
      hold_on(heartbeat, wake.get());
    }
    // Release before the heartbeat thread is joined: a waiter should not
    // wait for our thread to be scheduled.
    heartbeat.quiesce();
    Heartbeat::State state = heartbeat.snapshot();
    if (!m_options.min_hold) judge_unobserved_end(state);
    int status = finish(state);
    record_end(state, status);
    return status;
  }

private:
  void send(int signo) {
    signal_tree(m_child, signo, m_guard.pid());
    if (m_observer) m_observer->on_signal_sent(signo, SteadyClock::now());
  }

  // Reaps every child that ended; true once no descendant is left.
  bool reap() {
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG | WUNTRACED);
      if (pid > 0) {
        if (WIFSTOPPED(status)) {
          if (pid == m_child) m_job_stop_signal = WSTOPSIG(status);
          continue;
        }
        if (pid == m_child) m_child_status = status;
        continue;
      }
      if (pid < 0 && errno == EINTR) continue;
      return pid < 0 && errno == ECHILD;
    }
  }

  void supervise(Heartbeat &heartbeat, int wake_fd) {
    StopLimits limits{m_options.kill_after, m_options.lost_kill_after};
    if (m_options.max_runtime) limits.max_runtime_at = m_started + *m_options.max_runtime;
    auto first_renewal = m_lease.confirmed_at + renew_interval(m_lease.ttl);
    const int news_fd = m_backend.event_fd();
    while (!reap()) {
      if (int stop_signal = std::exchange(m_job_stop_signal, 0);
          stop_signal && follow_job_stop(m_child, stop_signal, m_guard.pid(), m_took_terminal))
        detail(1, "continued after the job was stopped by signal {}", stop_signal);
      note_group_gone();
      note_leftovers();
      auto now = SteadyClock::now();
      if (plan_renewal_start(now, first_renewal, heartbeat.started()).start_now)
        start_renewing(heartbeat, first_renewal);
      Heartbeat::State state = heartbeat.snapshot();
      // Every confirmed renewal moves the guard's deadline too.
      if (state.confirmed_at != m_guarded_t0) {
        m_guarded_t0 = state.confirmed_at;
        m_guard.kill_deadline(guard_kill_at(state.confirmed_at, state.ttl));
      }
      // A heartbeat that could not start has only that to say.
      LeaseReport report{state.confirmed_at, state.ttl, state.lost,
                         m_no_renewals.empty() ? state.reason : m_no_renewals};
      StopStep step = next_stop_step(m_stop, now, report, limits);
      if (m_stop.reason == StopReason::none && step.state.reason == StopReason::max_runtime)
        m_child_exited_before_stop = m_child_status.has_value();
      m_stop = std::move(step.state);
      if (step.send_term) send(SIGTERM);
      if (step.send_kill) send(SIGKILL);
      RenewalStart renewal = plan_renewal_start(now, first_renewal, heartbeat.started());
      pollfd fds[3] = {{Signals::event_fd(), POLLIN, 0}, {wake_fd, POLLIN, 0}, {news_fd, POLLIN, 0}};
      bool watch_news = news_fd >= 0 && renewal.watch_news;
      int ready = poll(fds, watch_news ? 3 : 2, poll_timeout(now, std::min(step.wake_at, renewal.wake_at)));
      if (ready < 0 && errno != EINTR) throw Error(ExitCode::internal, errno_message("poll failed", errno));
      if (watch_news && ready > 0 && (fds[2].revents & POLLIN)) start_renewing(heartbeat, first_renewal);
      drain(wake_fd);
      for (int signo : Signals::drain()) {
        if (signo == SIGCHLD) continue;
        detail(1, "forwarding signal {} to the job", signo);
        send(signo);
      }
    }
    m_ended_seen_at = SteadyClock::now();
  }

  // Without a thread (out of processes or memory) nothing renews the lease:
  // the job runs on until the timeline stops it, as if every renewal went
  // unanswered; it must not be abandoned by an exception.
  void start_renewing(Heartbeat &heartbeat, SteadyClock::time_point &first_renewal) {
    try {
      heartbeat.start();
    } catch (const std::system_error &failure) {
      m_no_renewals = fmt::format("cannot start the renewal thread: {}", failure.what());
      first_renewal = SteadyClock::time_point::max();
    }
  }

  // Once the job's first process has ended while processes it started
  // still run and keep the lock held, say which (-v) and that dlock waits
  // for them; once per run.
  void note_leftovers() {
    if (m_leftovers_noted || !m_child_status) return;
    m_leftovers_noted = true;
    m_leftovers = describe_processes(live_descendants(), m_guard.pid());
    if (!m_leftovers.empty())
      detail(1, "the job {}, but processes it started still run and keep lock '{}' held: {}; waiting for them",
             describe_status(*m_child_status), m_lease.name, m_leftovers);
  }

  // "exited 0", "was killed by signal 9"
  static std::string describe_status(int wait_status) {
    if (WIFSIGNALED(wait_status)) return fmt::format("was killed by signal {}", WTERMSIG(wait_status));
    return fmt::format("exited {}", exit_status_of(wait_status));
  }

  // "pid 12 (sleep 100), pid 13 (...)": at most three, then how many more.
  static std::string describe_processes(const std::vector<Descendant> &processes, pid_t spare) {
    std::vector<std::string> shown;
    std::size_t others = 0;
    for (const Descendant &process : processes) {
      if (process.pid == spare) continue;
      if (shown.size() == 3) {
        ++others;
        continue;
      }
      std::string command = command_or_name_of(process.pid, 60);
      shown.push_back(command.empty() ? fmt::format("pid {}", process.pid)
                                      : fmt::format("pid {} ({})", process.pid, command));
    }
    std::string out = fmt::format("{}", fmt::join(shown, ", "));
    if (others) out += fmt::format(" and {} more", others);
    return out;
  }

  // Once the job's first process is reaped and no other is left in its
  // process group, the group's number may be reused: the guard must forget
  // it. A group cannot refill once empty, so the first ESRCH settles it.
  void note_group_gone() {
    if (m_group_gone || !m_child_status) return;
    if (kill(-m_child, 0) == 0 || errno != ESRCH) return;
    m_group_gone = true;
    m_guard.group_gone();
  }

  // The loop above checks the deadlines only while the job runs: a job
  // that ended with no stop under way is judged by judge_end.
  void judge_unobserved_end(const Heartbeat::State &state) {
    if (m_stop.reason != StopReason::none) return;
    EndVerdict verdict = judge_end(m_ended_seen_at, {state.confirmed_at, state.ttl, state.lost, state.reason});
    if (verdict.clean) return;
    // The guard's SIGKILL at the deadline, not the job's own end. The guard
    // exits right after its kill: a short wait covers that moment without
    // holding up the exit when it was not the guard (it then lives on).
    if (verdict.late && m_child_status && WIFSIGNALED(*m_child_status) && WTERMSIG(*m_child_status) == SIGKILL &&
        m_guard.killed_at_deadline(Millis(50))) {
      m_stop.reason = StopReason::guard_killed;
      return;
    }
    m_stop.reason = StopReason::ended_unguarded;
    m_stop.why = verdict.why;
  }

  void record(const RunEvent &event) {
    if (m_options.events) m_options.events->record(event);
  }

  // The run's one terminal event (runner/events.hpp).
  void record_end(const Heartbeat::State &state, int status) {
    if (!m_options.events) return;
    RunEvent event;
    event.name = m_lease.name;
    event.at = m_ended_wall;
    // The duration from the monotonic clock: a wall clock stepped while
    // the job ran (NTP, an operator) must not make it negative or hours
    // long. The times themselves are the wall clock's.
    event.duration = duration_cast<Millis>(m_ended - m_started);
    event.exit_status = status;
    if (m_child_status) event.job_status = exit_status_of(*m_child_status);
    event.cause = m_cause;
    if (m_lock == JobLock::unlocked) {
      event.kind = EventKind::unlocked_end;
      record(event);
      return;
    }
    event.fence = m_lease.fence;
    event.wait = m_waited;
    event.renewals = state.renewals;
    switch (m_stop.reason) {
    case StopReason::none:
      event.kind = m_hold_lost.empty() ? EventKind::released : EventKind::lost;
      break;
    case StopReason::max_runtime:
      event.kind = EventKind::max_runtime;
      break;
    case StopReason::lost:
    case StopReason::lease_deadline:
    case StopReason::ended_unguarded:
    case StopReason::guard_killed:
      event.kind = EventKind::lost;
      break;
    }
    record(event);
  }

  // --min-hold D: a job that ended sooner leaves the lock held (and renewed
  // as while it ran) until D after it was taken, so that the same job
  // started a little later on a host whose clock is behind finds it busy.
  // SIGINT, SIGTERM, SIGHUP or SIGQUIT end the hold at once. A loss, or a
  // lease that can no longer be renewed in time, ends it too (reported; the
  // job's status stands: it had ended under the lock).
  void hold_on(Heartbeat &heartbeat, int wake_fd) {
    if (m_stop.reason != StopReason::none || m_lock == JobLock::unlocked) return;
    const auto until = m_started + *m_options.min_hold;
    if (SteadyClock::now() >= until) return;
    detail(1, "the job ended; lock '{}' stays held until --min-hold {} has passed", m_lease.name,
           format_duration(*m_options.min_hold));
    auto unused = SteadyClock::time_point::max();
    if (!heartbeat.started()) start_renewing(heartbeat, unused);
    for (;;) {
      auto now = SteadyClock::now();
      if (now >= until) return;
      Heartbeat::State state = heartbeat.snapshot();
      auto lapse = compute_deadlines(state.confirmed_at, state.ttl, Millis(0)).kill_at;
      if (state.lost || now >= lapse) {
        m_hold_lost = state.lost ? (state.reason.empty() ? "the backend refused the renewal" : state.reason)
                                 : "it could not be renewed before its lease could lapse";
        return;
      }
      pollfd fds[2] = {{Signals::event_fd(), POLLIN, 0}, {wake_fd, POLLIN, 0}};
      if (poll(fds, 2, poll_timeout(now, std::min(until, lapse))) < 0 && errno != EINTR)
        throw Error(ExitCode::internal, errno_message("poll failed", errno));
      drain(wake_fd);
      for (int signo : Signals::drain())
        if (signo == SIGINT || signo == SIGTERM || signo == SIGHUP || signo == SIGQUIT) {
          detail(1, "signal {} ended --min-hold early", signo);
          return;
        }
    }
  }

  int finish(const Heartbeat::State &state) {
    const std::string &name = m_lease.name;
    // After a lost lock there is nothing to release; after a lease deadline
    // the backend has not answered for most of T and the lease is about to
    // end by itself: a release would only hold dlock up for its timeout.
    // A lease in doubt is not released either: it ends by itself, and the
    // exit must not wait for a round trip to a backend that may be away.
    const bool release =
        (m_stop.reason == StopReason::none && m_hold_lost.empty()) || m_stop.reason == StopReason::max_runtime;
    if (release && m_lock == JobLock::locked) {
      try {
        if (m_backend.release(m_lease) == backend::ReleaseOutcome::not_owner && m_stop.reason == StopReason::none)
          say("warning: lock '{}' was no longer held by this run when it was released", name);
        // From here dlock only winds down, while a waiter that was just
        // woken needs a CPU (and, on a networked backend, the server's) to
        // take the lock and start its job: make way for it. Nice 19 is
        // never starved, only last in line.
        if (m_options.yield_after_release) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
      } catch (const std::exception &failure) {
        say("warning: could not release lock '{}': {}; it ends when its lease runs out", name, failure.what());
      }
    }
    auto held_for = duration_cast<Millis>(SteadyClock::now() - m_started);
    detail(1, "{} '{}' after {} ({} renewal{}); the job {}", release ? "released" : "gave up", name,
           format_duration(held_for), state.renewals, state.renewals == 1 ? "" : "s",
           m_child_status ? describe_status(*m_child_status) : "did not end");
    switch (m_stop.reason) {
    case StopReason::lost:
      m_cause = m_stop.why.empty() ? "the backend refused the renewal" : m_stop.why;
      say("lost lock '{}': {}; the job was stopped", name, m_cause);
      return m_options.lost_exit_code;
    case StopReason::lease_deadline:
      m_cause =
          "it could not be renewed before its lease could lapse" + (m_stop.why.empty() ? "" : " (" + m_stop.why + ")");
      say("lock '{}' {}; the job was stopped", name, m_cause);
      return m_options.lost_exit_code;
    case StopReason::ended_unguarded:
      m_cause = "it could have been lost before the job ended (" + m_stop.why + ")";
      say("lock '{}' {}; the job exited with status {}", name, m_cause,
          m_child_status ? exit_status_of(*m_child_status) : to_int(ExitCode::internal));
      return m_options.lost_exit_code;
    case StopReason::guard_killed:
      m_cause = "it could not be renewed while dlock was not running (stopped, hung or starved); its guard killed the "
                "job before the lease could lapse";
      say("lock '{}' {}", name, m_cause);
      return m_options.lost_exit_code;
    case StopReason::max_runtime:
      m_cause = fmt::format("it ran past --max-runtime {}", format_duration(*m_options.max_runtime));
      // The job's first process may have ended long before: then it is what
      // it left running that ran past the limit.
      if (m_child_status && m_child_exited_before_stop)
        say("job under lock '{}' {}, but processes it left ran past --max-runtime {}{}; they were stopped", name,
            describe_status(*m_child_status), format_duration(*m_options.max_runtime),
            m_leftovers.empty() ? "" : " (" + m_leftovers + ")");
      else
        say("job under lock '{}' {}; it was stopped", name, m_cause);
      return to_int(ExitCode::max_runtime);
    case StopReason::none:
      break;
    }
    if (!m_hold_lost.empty()) {
      m_cause = "during --min-hold, after the job had ended: " + m_hold_lost;
      say("warning: lock '{}' was lost {}; the job's status stands", name, m_cause);
    }
    return m_child_status ? exit_status_of(*m_child_status) : to_int(ExitCode::internal);
  }

  backend::Backend &m_backend;
  const RunOptions &m_options;
  const backend::Lease m_lease;
  Guard &m_guard;
  RunObserver *m_observer;
  pid_t m_child = -1;
  bool m_took_terminal = false; // the job has the terminal (spawn_child)
  std::optional<int> m_child_status;
  int m_job_stop_signal = 0; // the job's first process was stopped by it (reap)
  bool m_leftovers_noted = false;
  bool m_child_exited_before_stop = false; // at --max-runtime, only what the job left ran
  std::string m_leftovers;                 // what the job left running when it ended
  SteadyClock::time_point m_guarded_t0;    // the lease the guard's deadline is for
  bool m_group_gone = false;
  std::string m_no_renewals; // why the heartbeat could not start, if it could not
  SteadyClock::time_point m_started, m_ended;
  SteadyClock::time_point m_ended_seen_at;
  std::chrono::system_clock::time_point m_started_wall, m_ended_wall;
  StopState m_stop;
  JobLock m_lock;
  std::optional<Millis> m_waited; // how long taking the lock took
  std::string m_cause;            // why the run ended as it did, when not cleanly
  std::string m_hold_lost;        // why --min-hold ended with the lock lost
};

} // namespace

int supervise_job(backend::Backend &backend, const RunOptions &options, const backend::Lease &lease, Guard &guard,
                  RunObserver *observer, JobLock lock, std::optional<Millis> waited) {
  Supervisor supervisor(backend, options, lease, guard, observer, lock, waited);
  return supervisor.run();
}

} // namespace dlock::runner
