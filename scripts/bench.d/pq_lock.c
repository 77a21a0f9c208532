/* The lock a C programmer writes with libpq, for scripts/bench's pg section,
 * compiled on the fly into the bench's temp dir (cc ... -lpq).
 *
 *   pq_lock [--fence] CONNINFO KEYTEXT CMD [ARG...]
 *
 * Does what the bench's psycopg2 script does, with nothing in between:
 * connect with CONNINFO (the password comes from PGPASSWORD, which libpq
 * reads itself, never from argv), SELECT pg_advisory_lock on the key dlock
 * documents for KEYTEXT ("NS NAME": the first 8 bytes of its sha256,
 * big-endian and signed, computed by the server), fork and exec CMD from
 * PATH and wait for it, SELECT pg_advisory_unlock on the same key, PQfinish.
 * The session is in autocommit (no BEGIN), so no transaction stays open
 * while CMD runs. Exits with CMD's status (128 + signal if it was killed);
 * on any libpq failure, prints libpq's message and exits 1.
 *
 * --fence also takes a fencing token the way dlock does, in the lock's own
 * statement: the transaction's id, made durable by a transactional logical
 * message, so that its commit waits for the WAL flush (a crash can then
 * never hand the same number out again); CMD gets it as DLOCK_FENCE. The
 * bench shows with it how much of dlock's time is that flush. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#define KEY_SQL "(('x' || left(encode(sha256(convert_to($1::text, 'UTF8')), 'hex'), 16))::bit(64)::bigint)"

#define FENCE_SQL                                                                                                \
  "SELECT txid_current(), pg_logical_emit_message(true, 'dlock', '') FROM (SELECT pg_advisory_lock(" KEY_SQL        \
  ") OFFSET 0) s"

static int lock_call(PGconn *conn, const char *function, const char *keytext) {
  char sql[512];
  if (strcmp(function, "fence") == 0)
    snprintf(sql, sizeof sql, "%s", FENCE_SQL);
  else
    snprintf(sql, sizeof sql, "SELECT %s(" KEY_SQL ")", function);
  const char *params[1] = {keytext};
  PGresult *res = PQexecParams(conn, sql, 1, NULL, params, NULL, NULL, 0);
  int ok = PQresultStatus(res) == PGRES_TUPLES_OK;
  /* pg_advisory_unlock answers false when the session did not hold the key. */
  if (ok && strcmp(function, "fence") == 0 && setenv("DLOCK_FENCE", PQgetvalue(res, 0, 0), 1) != 0) {
    perror("pq_lock: setenv");
    ok = 0;
  } else if (ok && strcmp(function, "pg_advisory_unlock") == 0 && strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
    fprintf(stderr, "pq_lock: %s: the session did not hold the key\n", function);
    ok = 0;
  } else if (!ok) {
    fprintf(stderr, "pq_lock: %s: %s", function, PQerrorMessage(conn));
  }
  PQclear(res);
  return ok;
}

int main(int argc, char **argv) {
  int fence = argc > 1 && strcmp(argv[1], "--fence") == 0;
  argv += fence;
  argc -= fence;
  if (argc < 4) {
    fprintf(stderr, "usage: pq_lock [--fence] CONNINFO KEYTEXT CMD [ARG...]\n");
    return 64;
  }
  PGconn *conn = PQconnectdb(argv[1]);
  if (PQstatus(conn) != CONNECTION_OK) {
    fprintf(stderr, "pq_lock: connect: %s", PQerrorMessage(conn));
    PQfinish(conn);
    return 1;
  }
  if (!lock_call(conn, fence ? "fence" : "pg_advisory_lock", argv[2])) {
    PQfinish(conn);
    return 1;
  }
  int status = 0, code;
  pid_t pid = fork();
  if (pid < 0) {
    perror("pq_lock: fork");
    code = 1;
  } else {
    if (pid == 0) {
      execvp(argv[3], argv + 3);
      fprintf(stderr, "pq_lock: %s: %s\n", argv[3], strerror(errno));
      _exit(127);
    }
    pid_t reaped;
    while ((reaped = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (reaped < 0) {
      perror("pq_lock: waitpid");
      code = 1;
    } else {
      code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
  if (!lock_call(conn, "pg_advisory_unlock", argv[2])) code = code ? code : 1;
  PQfinish(conn);
  return code;
}
