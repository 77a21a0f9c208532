#pragma once

#include "runner/guard.hpp"
#include "runner/runner.hpp"

namespace dlock::runner {

// locked: the job runs under `lease`. unlocked: --if-unavailable run, the
// backend could not be reached and the job runs without any lock (no fence,
// no token; DLOCK_UNLOCKED=1 tells the job).
enum class JobLock { locked, unlocked };

// Runs the job under the lease just taken: starts it, renews the lease
// (runner/heartbeat.hpp) and enforces the safety timeline while it runs,
// forwards signals, waits until every descendant is gone, holds the lock on
// for --min-hold, releases it with compare-and-delete, records the run's
// end event, and returns the exit status for dlock (the job's, 128+N,
// lost or 124).
int supervise_job(backend::Backend &backend, const RunOptions &options, const backend::Lease &lease, Guard &guard,
                  RunObserver *observer, JobLock lock, std::optional<Millis> waited);

} // namespace dlock::runner
