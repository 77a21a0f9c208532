#!/usr/bin/env bash
# dlock's zk:// locks and kazoo's Lock on the same znode (/NS/NAME) exclude
# each other, both ways: a lock kazoo holds (its nodes are
# <hex>__lock__<seq>) makes dlock busy and hands over to a waiting dlock by
# its watch; a lock dlock holds makes kazoo busy (kazoo counts dlock's
# Curator-style nodes through extra_lock_patterns=["-lock-"]) and hands over
# to a waiting kazoo; --namespace maps to the first level; mixed contenders
# never overlap. kazoo's side is tests/e2e/interop/kazoo_lock.py.
SCENARIO="zookeeper: kazoo's Lock interoperates"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/interop/zk_interop_lib.sh"
use_zk_interop kazoo

check_lock_interop
pass
