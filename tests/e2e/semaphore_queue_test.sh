#!/usr/bin/env bash
# A semaphore's waiters queue behind the first, which alone looks at the
# slots and hears of a release of any of them at once (file: NAME.queue,
# inotify on the slot files; postgres: the key of 'NS NAME queue', the
# server's FIFO queue, and LISTEN/NOTIFY); the others sleep until they move
# up, and one that gives up lets the next move up (checks/semaphore_queue.sh).
# Runs once per backend with such a queue: bash semaphore_queue_test.sh KIND.
SCENARIO="a semaphore's waiters queue, the first hears of any slot's release at once"
. "$(dirname "$0")/lib.sh"
use_backend "${1:-file}"

case $SERVER_KIND in
file) check_semaphore_queue ;;
# PostgreSQL serves the waiters on a key in the order they came.
postgres) SEM_QUEUE_FIFO=1 check_semaphore_queue --ttl 30s ;;
*) fail "$SERVER_KIND has no such queue" ;;
esac
pass
