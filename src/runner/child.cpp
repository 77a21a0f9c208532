#include "runner/child.hpp"

#include "core/error.hpp"
#include "core/signals.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char** environ;

namespace dlock::runner {

namespace {

bool g_took_terminal = false;

std::vector<std::string> candidate_paths(const std::string& program) {
  if (program.find('/') != std::string::npos) return {program};
  const char* path = std::getenv("PATH");
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

std::vector<std::string> child_environment(const ChildSpec& spec) {
  std::map<std::string, std::string> values;
  std::vector<std::string> order;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string item(*entry);
    std::string key = item.substr(0, item.find('='));
    if (!values.count(key)) order.push_back(key);
    values[key] = item;
  }
  for (const auto& item : spec.environment) {
    std::string key = item.substr(0, item.find('='));
    if (!values.count(key)) order.push_back(key);
    values[key] = item;
  }
  for (const auto& key : spec.unset) values.erase(key);
  std::vector<std::string> out;
  for (const auto& key : order)
    if (auto found = values.find(key); found != values.end()) out.push_back(found->second);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool owns_terminal() { return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp(); }

} // namespace

pid_t spawn_child(const ChildSpec& spec) {
  if (spec.argv.empty()) throw UsageError("no command given");
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls, since other threads may hold allocator locks.
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = child_environment(spec);
  std::vector<std::string> paths = candidate_paths(spec.argv.front());
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);
  bool take_terminal = spec.take_terminal && owns_terminal();

  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) throw Error(ExitCode::internal, errno_message("cannot create a pipe", errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(error_pipe[0]);
    close(error_pipe[1]);
    throw Error(ExitCode::internal, errno_message("cannot fork", err));
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); // dlock died before the death signal was armed
    if (take_terminal) {
      signal(SIGTTOU, SIG_IGN);
      tcsetpgrp(STDIN_FILENO, getpid());
    }
    Signals::reset_in_child();
    signal(SIGTTOU, SIG_DFL);
    int err = ENOENT;
    bool denied = false;
    for (auto& path : paths) {
      execve(path.c_str(), argv.data(), envp.data());
      err = errno;
      if (err == EACCES) denied = true;
      if (err != ENOENT && err != ENOTDIR && err != EACCES) break;
    }
    if (denied && (err == ENOENT || err == ENOTDIR)) err = EACCES;
    [[maybe_unused]] auto ignored = write(error_pipe[1], &err, sizeof err);
    _exit(127);
  }
  setpgid(pid, pid);
  if (take_terminal) g_took_terminal = true;
  close(error_pipe[1]);
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
    restore_terminal();
    const std::string& program = spec.argv.front();
    if (err == ENOENT || err == ENOTDIR)
      throw Error(ExitCode::not_found, fmt::format("command not found: {}", program));
    throw Error(ExitCode::cannot_execute, errno_message(fmt::format("cannot execute {}", program), err));
  }
  return pid;
}

void restore_terminal() {
  if (!g_took_terminal) return;
  g_took_terminal = false;
  // dlock's group is in the background now: without ignoring SIGTTOU,
  // tcsetpgrp would stop us.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGTTOU, &ignore, &previous);
  tcsetpgrp(STDIN_FILENO, getpgrp());
  sigaction(SIGTTOU, &previous, nullptr);
}

std::vector<pid_t> live_descendants() {
  std::multimap<pid_t, pid_t> children; // parent -> child
  std::map<pid_t, char> state;
  DIR* proc = opendir("/proc");
  if (!proc) return {};
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string line;
    if (!std::getline(in, line)) continue;
    // "pid (comm) S ppid ...": comm may hold spaces and parentheses.
    auto close_paren = line.rfind(')');
    if (close_paren == std::string::npos || close_paren + 4 > line.size()) continue;
    char process_state = line[close_paren + 2];
    long ppid = std::strtol(line.c_str() + close_paren + 4, nullptr, 10);
    children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
    state[static_cast<pid_t>(pid)] = process_state;
  }
  closedir(proc);
  std::vector<pid_t> found;
  std::vector<pid_t> frontier{getpid()};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      frontier.push_back(it->second);
      if (state[it->second] != 'Z' && state[it->second] != 'X') found.push_back(it->second);
    }
  }
  return found;
}

std::size_t signal_tree(pid_t process_group, int signo) {
  std::size_t signalled = 0;
  if (process_group > 0 && kill(-process_group, signo) == 0) ++signalled;
  for (pid_t pid : live_descendants())
    if (kill(pid, signo) == 0) ++signalled;
  return signalled;
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 128;
}

} // namespace dlock::runner
