#include "runner/child.hpp"

#include "core/error.hpp"
#include "core/signals.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <memory>
#include <pthread.h>
#include <sched.h>
#include <string_view>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <utility>

extern char **environ;

namespace dlock::runner {

namespace {

std::vector<std::string> candidate_paths(const std::string &program) {
  if (program.find('/') != std::string::npos) return {program};
  const char *path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::vector<std::string> candidates;
  std::size_t start = 0;
  for (;;) {
    auto colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon - start);
    candidates.push_back((dir.empty() ? "." : dir) + "/" + program);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return candidates;
}

std::string_view variable_name(const char *entry) {
  std::string_view item(entry);
  return item.substr(0, item.find('='));
}

// The child's environment for execve: each name once, where it first
// appears in ours, with its last value; spec.environment's entries replace
// or extend it and spec.unset's names are taken out. The entries point
// into environ and into spec (execve copies them, writing none), so no
// variable is copied.
std::vector<char *> child_environment(const ChildSpec &spec) {
  std::vector<char *> entries;
  for (char **entry = environ; entry && *entry; ++entry)
    entries.push_back(*entry);
  for (const std::string &item : spec.environment)
    entries.push_back(const_cast<char *>(item.c_str()));
  // (name, position), sorted: each name's entries together, in order.
  std::vector<std::pair<std::string_view, std::size_t>> by_name;
  by_name.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i)
    by_name.emplace_back(variable_name(entries[i]), i);
  std::sort(by_name.begin(), by_name.end());
  for (std::size_t first = 0, last = 0; first < by_name.size(); first = last) {
    std::string_view name = by_name[first].first;
    for (last = first + 1; last < by_name.size() && by_name[last].first == name;)
      ++last;
    bool unset = std::find(spec.unset.begin(), spec.unset.end(), name) != spec.unset.end();
    entries[by_name[first].second] = unset ? nullptr : entries[by_name[last - 1].second];
    for (std::size_t i = first + 1; i < last; ++i)
      entries[by_name[i].second] = nullptr;
  }
  entries.erase(std::remove(entries.begin(), entries.end(), nullptr), entries.end());
  entries.push_back(nullptr);
  return entries;
}

std::vector<char *> pointers(std::vector<std::string> &strings) {
  std::vector<char *> out;
  for (auto &s : strings)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool owns_terminal() { return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp(); }

} // namespace

namespace {

// What the child needs, prepared before the clone: after it, the child runs
// on its own small stack in our memory until it execs, so it may only make
// system calls and must not touch the allocator or any lock.
struct ExecPlan {
  std::vector<std::string> paths;
  char **argv;
  char **envp;
  pid_t parent;
  bool take_terminal;
  int error_fd;
  const int *inherited_fds;
  std::size_t inherited_count;
};

int exec_child(void *arg) {
  auto *plan = static_cast<ExecPlan *>(arg);
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != plan->parent) _exit(127); // dlock died before the death signal was armed
  if (plan->take_terminal) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGTTOU, &ignore, nullptr);
    tcsetpgrp(STDIN_FILENO, getpid());
    ignore.sa_handler = SIG_DFL;
    sigaction(SIGTTOU, &ignore, nullptr);
  }
  Signals::reset_in_child(); // also unblocks every signal
  // The child's descriptor table is its own copy (no CLONE_FILES): clearing
  // close-on-exec here leaves dlock's descriptors as they are.
  for (std::size_t i = 0; i < plan->inherited_count; ++i) {
    int fd = plan->inherited_fds[i];
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0) fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
  }
  int err = ENOENT;
  bool denied = false;
  for (const auto &path : plan->paths) {
    execve(path.c_str(), plan->argv, plan->envp);
    err = errno;
    if (err == EACCES) denied = true;
    if (err != ENOENT && err != ENOTDIR && err != EACCES) break;
  }
  if (denied && (err == ENOENT || err == ENOTDIR)) err = EACCES;
  [[maybe_unused]] auto ignored = write(plan->error_fd, &err, sizeof err);
  _exit(127);
}

} // namespace

namespace {

DLOCK_RAW_CHILD_CODE long clone_silent_copy(int (*entry)(void *), void *arg) {
  long pid = syscall(SYS_clone, 0L, 0L, 0L, 0L, 0L);
  if (pid == 0) syscall(SYS_exit_group, entry(arg));
  return pid;
}

} // namespace

pid_t clone_process(CloneKind kind, int (*entry)(void *), void *arg) {
  // Left uninitialised: only the few pages the child touches get faulted in.
  constexpr std::size_t k_stack_size = 64 * 1024;
  std::unique_ptr<char[]> stack;
  if (kind == CloneKind::shared_until_exec) stack = std::make_unique_for_overwrite<char[]>(k_stack_size);
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t pid = -1;
  if (kind == CloneKind::silent_copy) {
    pid = static_cast<pid_t>(clone_silent_copy(entry, arg));
  } else {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    pid = fork();
    if (pid == 0) _exit(entry(arg));
#else
    pid = clone(entry, stack.get() + k_stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
#endif
  }
  int clone_error = errno;
  if (pid > 0) setpgid(pid, pid);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = clone_error;
  return pid;
}

SpawnedChild spawn_child(const ChildSpec &spec) {
  if (spec.argv.empty()) throw UsageError("no command given");
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char *> argv = pointers(argv_strings);
  std::vector<char *> envp = child_environment(spec);

  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) throw resource_error("cannot create a pipe", errno);
  // Prepared here, not in the child: it may not allocate. Standard
  // descriptors are inherited anyway; -1 stands for none.
  std::vector<int> inherited;
  for (int fd : spec.inherited_fds)
    if (fd > STDERR_FILENO) inherited.push_back(fd);
  ExecPlan plan{candidate_paths(spec.argv.front()),    argv.data(),   envp.data(),      getpid(),
                spec.take_terminal && owns_terminal(), error_pipe[1], inherited.data(), inherited.size()};

  // posix_spawn would be as fast, but cannot set PR_SET_PDEATHSIG.
  pid_t pid = clone_process(CloneKind::shared_until_exec, exec_child, &plan);
  int clone_error = errno;
  close(error_pipe[1]);
  if (pid < 0) {
    close(error_pipe[0]);
    throw resource_error("cannot start the command", clone_error);
  }
  SpawnedChild child{pid, plan.take_terminal};
  int err = 0;
  ssize_t n;
  do {
    n = read(error_pipe[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  close(error_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    restore_terminal(child.took_terminal);
    const std::string &program = spec.argv.front();
    if (err == ENOENT || err == ENOTDIR)
      throw Error(ExitCode::not_found, fmt::format("command not found: {}", program));
    throw Error(ExitCode::cannot_execute, errno_message(fmt::format("cannot execute {}", program), err));
  }
  return child;
}

namespace {

// Makes `group` the terminal's foreground process group. dlock's group may
// be in the background at that moment: without ignoring SIGTTOU, tcsetpgrp
// would stop us.
void give_terminal(pid_t group) {
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGTTOU, &ignore, &previous);
  tcsetpgrp(STDIN_FILENO, group);
  sigaction(SIGTTOU, &previous, nullptr);
}

} // namespace

void restore_terminal(bool &took_terminal) {
  if (!took_terminal) return;
  took_terminal = false;
  give_terminal(getpgrp());
}

bool follow_job_stop(pid_t job_group, int stop_signal, pid_t spare, bool took_terminal) {
  if (!took_terminal || (stop_signal != SIGTSTP && stop_signal != SIGTTIN && stop_signal != SIGTTOU)) return false;
  // As sudo does: the terminal back to our group, then we stop with the
  // job's own signal (its default action, whatever our mask), so that the
  // shell, which waits for dlock, sees its job stopped and takes the
  // terminal back.
  give_terminal(getpgrp());
  struct sigaction stop_action {
  }, previous{};
  stop_action.sa_handler = SIG_DFL;
  sigemptyset(&stop_action.sa_mask);
  sigaction(stop_signal, &stop_action, &previous);
  sigset_t only, mask;
  sigemptyset(&only);
  sigaddset(&only, stop_signal);
  pthread_sigmask(SIG_UNBLOCK, &only, &mask);
  kill(getpid(), stop_signal);
  // Continued: by fg (the shell gave our group the terminal, which goes on
  // to the job) or by bg (it did not: the job runs in the background).
  pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  sigaction(stop_signal, &previous, nullptr);
  if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp()) give_terminal(job_group);
  signal_tree(job_group, SIGCONT, spare);
  return true;
}

std::vector<Descendant> live_descendants() {
  struct Entry {
    pid_t pid;
    pid_t process_group;
    bool live;
  };
  std::multimap<pid_t, Entry> children; // parent -> child
  DIR *proc = opendir("/proc");
  if (!proc) return {};
  while (dirent *entry = readdir(proc)) {
    char *end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string line;
    if (!std::getline(in, line)) continue;
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses.
    auto close_paren = line.rfind(')');
    if (close_paren == std::string::npos || close_paren + 4 > line.size()) continue;
    char process_state = line[close_paren + 2];
    char *after_ppid = nullptr;
    long ppid = std::strtol(line.c_str() + close_paren + 4, &after_ppid, 10);
    long process_group = std::strtol(after_ppid, nullptr, 10);
    children.emplace(static_cast<pid_t>(ppid), Entry{static_cast<pid_t>(pid), static_cast<pid_t>(process_group),
                                                     process_state != 'Z' && process_state != 'X'});
  }
  closedir(proc);
  std::vector<Descendant> found;
  std::vector<pid_t> frontier{getpid()};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      frontier.push_back(it->second.pid);
      if (it->second.live) found.push_back({it->second.pid, it->second.process_group});
    }
  }
  return found;
}

std::size_t signal_tree(pid_t process_group, int signo, pid_t spare) {
  // The group first, in one system call: it reaches every member at once,
  // a child being forked at that moment included (the kernel passes a
  // signal sent to a group during a fork on to the new child). Then, each
  // once, the descendants outside the group, listed after the group was
  // signalled. A process that leaves the group between the two steps gets
  // the signal twice; one that joins the group from outside in that moment
  // (setpgid into the job's group, which a daemonizing helper never does)
  // gets none. Listing first would turn the first case into a missed
  // signal instead, and a missed stop signal is the worse of the two.
  std::size_t signalled = 0;
  if (process_group > 1 && kill(-process_group, signo) == 0) ++signalled;
  for (const Descendant &process : live_descendants())
    if (process.pid != spare && (process_group <= 1 || process.process_group != process_group) &&
        kill(process.pid, signo) == 0)
      ++signalled;
  return signalled;
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 128;
}

} // namespace dlock::runner
