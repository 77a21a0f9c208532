/* Helper for scripts/bench, compiled on the fly into the bench's temp dir.
 *
 *   stamp hold FIFO OUT   block until a byte arrives on FIFO, then write the
 *                         CLOCK_MONOTONIC time (ns) to OUT and exit 0: the
 *                         moment the lock holder's job ends. Gives up after
 *                         30 s (SIGALRM), so a bench killed with SIGKILL
 *                         leaves no holder behind for long.
 *   stamp start OUT       write the CLOCK_MONOTONIC time (ns) to OUT first
 *                         thing and exit 0: the moment the waiter's job starts.
 *   stamp rss CMD [ARG..] fork, exec CMD, wait4 it and print its peak RSS in
 *                         KiB (ru_maxrss, like GNU time's %M); exit with the
 *                         command's status.
 *
 * Everything that can be done before the clock is read is done before it, so
 * the stamps sit as close as possible to process end and start. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int put_stamp(int fd, const struct timespec *ts) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%lld\n", (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec);
  return write(fd, buf, (size_t)n) == n ? 0 : 1;
}

int main(int argc, char **argv) {
  struct timespec ts;
  if (argc == 3 && strcmp(argv[1], "start") == 0) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return 2;
    _exit(put_stamp(fd, &ts));
  }
  if (argc == 4 && strcmp(argv[1], "hold") == 0) {
    alarm(30);
    int out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) return 2;
    int in = open(argv[2], O_RDONLY | O_CLOEXEC);
    if (in < 0) return 2;
    char byte;
    if (read(in, &byte, 1) != 1) return 3;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    _exit(put_stamp(out, &ts));
  }
  if (argc >= 3 && strcmp(argv[1], "rss") == 0) {
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      execvp(argv[2], argv + 2);
      _exit(127);
    }
    int status = 0;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0)
      if (errno != EINTR) return 2;
    printf("%ld\n", usage.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  fprintf(stderr, "usage: stamp start OUT | stamp hold FIFO OUT | stamp rss CMD [ARG...]\n");
  return 64;
}
