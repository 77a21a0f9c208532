#!/usr/bin/env bash
# dlock's zk:// locks and Apache Curator's InterProcessMutex on the same
# znode (/NS/NAME) exclude each other, both ways: a lock Curator holds makes
# dlock busy and hands over to a waiting dlock by its watch; a lock dlock
# holds makes Curator busy and hands over to a waiting Curator; --namespace
# maps to the first level; mixed contenders never overlap. Curator's side is
# tests/e2e/interop/CuratorLock.java, compiled here.
SCENARIO="zookeeper: Curator's InterProcessMutex interoperates"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/interop/zk_interop_lib.sh"
use_zk_interop curator

check_lock_interop
pass
