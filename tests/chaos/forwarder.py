"""The TCP forwarder tests/chaos/netns.py puts between a client namespace
and the servers' loopback ports: an asyncio relay in a daemon thread that
closes both sides when either closes, can hold traffic (delay) and can stop
relaying."""

import asyncio
import os
import socket
import threading
import time


class _LoopThread:
    """An asyncio event loop in a daemon thread."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._main, daemon=True,
                                       name="netns-forwarder")
        self.thread.start()

    def _main(self):
        # The forwarders play the network: they must not wait for a CPU
        # behind the clients they relay for (at a cell's start fifteen
        # dlocks, their shells and namespaces start at once, and a relay
        # slower than a Redlock node's 200 ms answer time was a "no
        # quorum" at a first acquisition). Nice is per thread on Linux:
        # this thread alone runs ahead, and the processes the others start
        # keep the usual priority.
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
        except (OSError, AttributeError):
            pass
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coro, timeout=10):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self):
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class Forwarder:
    """TCP relay listen_host:listen_port -> target_host:target_port, run on
    an asyncio loop. When either side closes (EOF or error) both are closed
    (data already read is written first). delay_s, settable at any time,
    holds each chunk that long before writing it (per direction)."""

    def __init__(self, listen_host, listen_port, target_host, target_port):
        self.listen_host, self.listen_port = listen_host, listen_port
        self.target_host, self.target_port = target_host, target_port
        self.delay_s = 0.0
        self.server = None
        self.conns = set()
        self.accepted = 0

    async def start(self):
        self.server = await asyncio.start_server(
            self._handle, self.listen_host, self.listen_port,
            reuse_address=True)
        self.listen_port = self.server.sockets[0].getsockname()[1]

    async def stop(self):
        if self.server:
            self.server.close()
        for w in list(self.conns):
            w.transport.abort()
        self.conns.clear()
        if self.server:
            try:
                await asyncio.wait_for(self.server.wait_closed(), 2)
            except (asyncio.TimeoutError, Exception):
                pass

    async def _pump(self, reader, writer, done):
        """Copies reader -> writer, honouring delay_s; sets done on EOF or
        error in either direction."""
        q = asyncio.Queue()

        async def read_side():
            try:
                while not done.is_set():
                    data = await reader.read(65536)
                    if not data:
                        break
                    await q.put((time.monotonic() + self.delay_s, data))
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                await q.put(None)

        async def write_side():
            try:
                while True:
                    item = await q.get()
                    if item is None:
                        break
                    due, data = item
                    wait = due - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    writer.write(data)
                    await writer.drain()
            except (OSError, ConnectionError):
                pass
            finally:
                done.set()

        r = asyncio.ensure_future(read_side())
        try:
            await write_side()
        finally:
            r.cancel()

    async def _handle(self, creader, cwriter):
        self.accepted += 1
        self.conns.add(cwriter)
        swriter = None
        try:
            try:
                sreader, swriter = await asyncio.open_connection(
                    self.target_host, self.target_port)
            except OSError:
                return
            self.conns.add(swriter)
            done = asyncio.Event()
            a = asyncio.ensure_future(self._pump(creader, swriter, done))
            b = asyncio.ensure_future(self._pump(sreader, cwriter, done))
            await done.wait()
            # one direction ended: give the other a moment to flush what it
            # already read, then close both sides
            await asyncio.wait([a, b], timeout=0.05 + self.delay_s)
            a.cancel()
            b.cancel()
        finally:
            for w in (cwriter, swriter):
                if w is not None:
                    self.conns.discard(w)
                    try:
                        w.close()
                    except Exception:
                        pass


# ---------------------------------------------------------------- namespace
