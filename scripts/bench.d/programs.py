"""The programs scripts/bench needs for the sections it is asked to measure."""

import os
import re
import shutil
import subprocess

import postgres
import servers


def find_tools(args, sections):
    """The absolute paths of the programs the chosen sections need, or a message."""
    tools = {"dlock": args.dlock, "flock": args.flock}
    needed_for = {}
    for what, path, users in (("redis-server", args.redis_server, ("redis", "redlock")),
                              ("etcd", args.etcd, ("redis", "etcd")), ("etcdctl", args.etcdctl, ("redis", "etcd")),
                              ("redis-cli", shutil.which("redis-cli"), ("redis", "redlock")),
                              ("true", shutil.which("true"), ("redis",)), ("sh", "/bin/sh", ("redis", "redlock")),
                              ("redis-python", args.redis_python, ("redis", "redlock")),
                              ("java", args.java, ("zk",)), ("kazoo-python", args.kazoo_python, ("zk",)),
                              ("psycopg2-python", args.psycopg2_python, ("pg",))):
        needed_for[what] = [section for section in users if section in sections]
        if needed_for[what]:
            tools[what] = path or ""
    tools = {k: os.path.abspath(v) if v else v for k, v in tools.items()}
    for what, path in tools.items():
        if not path or not os.access(path, os.X_OK):
            path = path or f"not on PATH ({os.environ.get('PATH', '')})"
            hint = "" if what in ("dlock", "flock") else \
                f" (needed for {', '.join(needed_for[what])}: scripts/install-deps installs it; --only file needs no servers)"
            return tools, f"{what} not found or not executable: {path}{hint}"
    if "redis" in sections or "redlock" in sections:
        problem = python_module_missing(tools["redis-python"], "redis", "python3-redis", "--redis-python")
        if problem:
            return tools, f"{problem} (needed for redis and redlock; --only file needs no servers)"
    if "zk" in sections:
        problem = servers.zookeeper_server.missing(tools["java"]) or kazoo_missing(tools["kazoo-python"])
        if problem:
            return tools, f"{problem} (needed for zk; --only file needs no servers)"
    if "pg" in sections:
        tools["pg-bindir"] = os.path.abspath(args.pg_bindir) if args.pg_bindir else ""
        problem = postgres.missing(tools["pg-bindir"], tools["psycopg2-python"])
        if problem:
            return tools, f"{problem} (needed for pg; --only file needs no servers)"
    for backend, users in (("redis", ("redis", "redlock")), ("redlock", ("redlock",)), ("zk", ("zk",)),
                           ("postgres", ("pg",)), ("etcd", ("etcd",))):
        if any(section in sections for section in users) and not backend_available(tools["dlock"], backend):
            return tools, f"{tools['dlock']} has no {backend} backend (`dlock version` does not list it as available)"
    if not os.path.exists("/proc/locks"):
        return tools, "/proc/locks is needed to see that a waiter is blocked"
    return tools, None


def backend_available(dlock, backend):
    # `dlock version` lists each backend on an indented line, details below it, more indented.
    out = subprocess.run([dlock, "version"], capture_output=True, text=True).stdout
    entry = re.search(rf"^( +){re.escape(backend)}\s.*\n(?:\1 +.*\n?)*", out, re.MULTILINE)
    return entry is not None and "not available" not in entry.group(0)


def kazoo_missing(python):
    return python_module_missing(python, "kazoo.client", "python3-kazoo", "--kazoo-python")


def python_module_missing(python, module, package, option):
    out = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True)
    if out.returncode == 0:
        return None
    return (f"{python} cannot import {module.split('.')[0]}: install {package} (Debian, for /usr/bin/python3) "
            f"or pass {option}")
