#pragma once
// The file backend's shared holders (--shared readers and a semaphore's
// slot holders), who all hold LOCK_SH on the lock file and share its
// record: how they update it one at a time, drop the dead ones, and tell a
// name held another way.
#include "backend/backend.hpp"
#include "backend/file/record.hpp"
#include "core/signals.hpp"
#include "core/unique_fd.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <sys/stat.h>

namespace dlock::backend::file {

// Serialises the record updates of shared holders: an OFD write lock on
// the whole file for the few microseconds of a read-modify-write. Linux
// keeps OFD locks apart from flock(2), so it neither blocks nor is blocked
// by the lock itself. `path` names the file in an error.
//
// dlock's holders keep it for microseconds, but any process that can open
// the file can hold a POSIX or OFD lock on it for ever (lockf(3)): the wait
// is bounded by k_record_patience (then AnsweredError, 69: someone may hold
// the lock) and, when `stop_on_signal`, ends at a stop signal
// (RecordWaitInterrupted), so that no wait of dlock's is endless or deaf.
inline constexpr std::chrono::seconds k_record_patience{5};
struct RecordWaitInterrupted {
  int signo;
};
class RecordLock {
public:
  RecordLock(int fd, const std::string &path, bool stop_on_signal = true);
  ~RecordLock();
  RecordLock(const RecordLock &) = delete;
  RecordLock &operator=(const RecordLock &) = delete;

private:
  int m_fd;
};

// Drops the readers the kernel no longer names as holders of the file
// `identity` (killed ones), and a semaphore's N once none is left.
void prune_readers(LockRecord &record, const struct stat &identity);

// Why `request` may not join the record's live shared holders (readers
// against a semaphore, a semaphore of another N), naming what holds it;
// nullopt if it may. `path` is the lock file's.
std::optional<std::string> mixed_refusal(const LockRequest &request, const LockRecord &record, const std::string &path);

// Why an exclusive request may not wait for the record's holders: they
// hold the name as a semaphore; nullopt otherwise.
std::optional<std::string> semaphore_refusal(const LockRequest &request, const LockRecord &record);

// Slot K of a semaphore is the file "NAME.slotK" beside "NAME.lock", and
// its waiters queue on "NAME.queue" (no name's lock file ends in ".slotK"
// or ".queue", so none is taken for a lock). `file` is the lock file's name.
std::string slot_file(const std::string &file, unsigned slot);
std::string queue_file(const std::string &file);

// Opens (creating if needed) one of the files of a lock in its directory,
// refusing one that is unsafe (FileBackend's open_lock_file).
using OpenFile = std::function<UniqueFd(const std::string &file)>;

struct TakenSlot {
  UniqueFd fd; // the slot file, LOCK_EX
  unsigned slot = 0;
};

// A slot file of the semaphore of `n` on `file` that LOCK_EX | LOCK_NB
// takes, all tried from a random one. `dir` names the directory in errors.
std::optional<TakenSlot> free_slot(const OpenFile &open, const std::string &dir, const std::string &file, unsigned n);

struct SlotWait {
  std::optional<TakenSlot> taken; // nullopt: the deadline passed, or a signal came
  int signo = 0;                  // the signal that ended the wait
};

// Waits for a slot of the semaphore of `n` on `file`, queued on its queue
// file with a blocking LOCK_EX (the kernel's queue): only the
// waiter at the front looks at the slots, so a release wakes one process
// whatever the number of waiters. That one keeps the slot files open,
// waits in the kernel on one of them and hears of the release of any
// other at once (SlotNews). It tries them all again every 1 to 2 s,
// jittered, for a release the kernel does not report (a holder's
// descendant keeping the file open after release), and opens them again
// when one was replaced (release --force); without inotify it tries them
// every 10 to 20 ms and opens them again every 1 to 2 s. A waiter that
// gives up closes its queue file, which lets the next one move up.
SlotWait wait_for_slot(const OpenFile &open, const std::string &dir, const std::string &file, unsigned n,
                       std::optional<std::chrono::steady_clock::time_point> deadline, const Interrupt *interrupt);

} // namespace dlock::backend::file
