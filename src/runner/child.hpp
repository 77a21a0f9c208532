#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace dlock::runner {

struct ChildSpec {
  std::vector<std::string> argv;
  // "KEY=VALUE" entries that replace or extend the inherited environment.
  std::vector<std::string> environment;
  // Variables removed from the child's environment (secrets such as DLOCK_PASSWORD).
  std::vector<std::string> unset;
  // Hand the terminal's foreground to the child's process group when dlock
  // owns it, so that interactive jobs can read the terminal.
  bool take_terminal = true;
  // Descriptors the child keeps, at the same numbers, although dlock opened
  // them close-on-exec (backend::Backend::lifetime_fds): the flag is cleared
  // in the child only.
  std::vector<int> inherited_fds;
};

// Keeps a function out of the sanitizers' reach: it runs in a process made
// by a raw clone (clone_process), whose copy of the sanitizer runtimes'
// state is not theirs to use.
#define DLOCK_RAW_CHILD_CODE __attribute__((no_sanitize("address", "thread", "undefined")))

// How clone_process makes the new process.
enum class CloneKind {
  // Shares dlock's memory, on a stack of its own, and suspends the calling
  // thread until it execs or exits (CLONE_VM | CLONE_VFORK, as posix_spawn
  // does: no page tables to copy); its end sends SIGCHLD. The job.
  // Sanitized builds make a plain fork instead: their runtimes cannot
  // follow a child that shares our memory on a stack of its own.
  shared_until_exec,
  // A copy of dlock's memory whose end sends no signal (exit signal 0):
  // waitpid(-1) without __WCLONE neither reports nor counts it. No fork
  // handlers run, so `entry` may make raw system calls only, and must be
  // DLOCK_RAW_CHILD_CODE. The guard.
  silent_copy,
};

// Runs `entry(arg)` in a new process of `kind`, which exits with what
// `entry` returns, and puts it in a process group of its own (the child
// should call setpgid(0, 0) too: whichever comes first). Every signal is
// blocked around the clone, and stays blocked in the new process until
// `entry` unblocks it, so that none of dlock's handlers runs in a process
// that shares or copies its memory. Returns the pid, or -1 with errno set.
pid_t clone_process(CloneKind kind, int (*entry)(void *), void *arg);

// Starts the child in its own process group with PR_SET_PDEATHSIG (SIGKILL),
// default signal dispositions, an empty signal mask and no descriptor of
// dlock's besides stdin, stdout, stderr and `inherited_fds`. Must be called
// from the thread that outlives the child: the death signal fires when the
// *thread* that forked exits. Throws dlock::Error with exit code 127 (not
// found) or 126 (cannot execute) if the command cannot be executed.
struct SpawnedChild {
  pid_t pid = -1;
  // The child's process group was made the terminal's foreground group
  // (ChildSpec::take_terminal, and dlock had it): restore_terminal gives it
  // back.
  bool took_terminal = false;
};
SpawnedChild spawn_child(const ChildSpec &spec);

// Gives the terminal back to dlock's own process group if spawn_child took
// it, and clears `took_terminal`.
void restore_terminal(bool &took_terminal);

// The job's first process was stopped by `stop_signal`. If it was stopped
// from the terminal (SIGTSTP: Ctrl-Z; SIGTTIN, SIGTTOU: a background read
// or write) while it had the terminal from spawn_child (`took_terminal`),
// dlock stops itself
// the same way, so that the shell's job control works (fg, bg, kill %1),
// and returns once continued, having continued the job (every process of
// it but `spare`) and, after fg, given it the terminal again. false (and
// nothing done) for any other stop: a job stopped by SIGSTOP stays so.
bool follow_job_stop(pid_t job_group, int stop_signal, pid_t spare, bool took_terminal);

struct Descendant {
  pid_t pid;
  pid_t process_group;
};

// Every live descendant of this process (children, grandchildren, ...),
// found through /proc, with the process group each was in when listed;
// zombies are left out, they are already gone.
std::vector<Descendant> live_descendants();

// Sends `signo` once to every process of the job: to the process group
// `process_group`, then to each live descendant outside that group (one
// that left it with setsid or setpgid) but `spare` (the guard,
// runner/guard.hpp). Returns how many kill() calls succeeded (the group
// counts as one).
std::size_t signal_tree(pid_t process_group, int signo, pid_t spare = -1);

// "exited 3" / "killed by signal 9" → the exit status dlock passes on:
// the child's code, or 128+N when killed by signal N.
int exit_status_of(int wait_status);

} // namespace dlock::runner
