// Apache Curator's InterProcessReadWriteLock, driven from the shell, for the
// test that checks that dlock's zk:// shared and exclusive locks and Curator's
// read and write locks on the same znode exclude each other:
//
//   java -cp CP CuratorReadWrite CONNECT PATH read|write hold [RELEASE_FILE]
//       Waits as long as it takes for the read or the write lock on PATH,
//       prints "acquired node=NAME czxid=N", then holds it until RELEASE_FILE
//       exists (or, without one, until stdin reaches end of file: mind that a
//       background job of a script has /dev/null there), releases it and
//       prints "released".
//   java -cp CP CuratorReadWrite CONNECT PATH read|write try TIMEOUT_MS
//       One acquire with that timeout: "acquired ..." (released again at
//       once, exit 0) or "busy" (exit 75, as dlock's busy status).
//
// Exit status and failures: see CuratorTool (76: the session was lost while
// the lock was held).

import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;

public final class CuratorReadWrite {
    private static final String USAGE = "CONNECT PATH read|write hold [RELEASE_FILE] | try TIMEOUT_MS";

    // The read and the write lock of an InterProcessReadWriteLock on PATH, each
    // exposing the path of the node it created (protected in Curator).
    private static final class ReadLock extends InterProcessReadWriteLock.ReadLock {
        ReadLock(CuratorFramework client, String path) {
            super(client, path, null, new InterProcessReadWriteLock.WriteLock(client, path, null));
        }

        String lockNodePath() {
            return getLockPath();
        }
    }

    private static final class WriteLock extends InterProcessReadWriteLock.WriteLock {
        WriteLock(CuratorFramework client, String path) {
            super(client, path, null);
        }

        String lockNodePath() {
            return getLockPath();
        }
    }

    private CuratorReadWrite() {
    }

    public static void main(String[] args) {
        CuratorTool.named("CuratorReadWrite");
        if (args.length < 4) {
            CuratorTool.usage(USAGE);
        }
        String path = args[1];
        String kind = args[2];
        String mode = args[3];
        if (!kind.equals("read") && !kind.equals("write")) {
            CuratorTool.usage(USAGE);
        }
        CuratorTool.run(args[0], client -> {
            InterProcessMutex mutex;
            Supplier<String> node;
            if (kind.equals("read")) {
                ReadLock read = new ReadLock(client, path);
                mutex = read;
                node = read::lockNodePath;
            } else {
                WriteLock write = new WriteLock(client, path);
                mutex = write;
                node = write::lockNodePath;
            }
            String what = "the " + kind + " lock on " + path;
            switch (mode) {
                case "hold":
                    return hold(client, mutex, node, what, args.length > 4 ? args[4] : null);
                case "try":
                    if (args.length < 5) {
                        CuratorTool.usage(USAGE);
                    }
                    return tryOnce(client, mutex, node, Long.parseLong(args[4]));
                default:
                    CuratorTool.usage(USAGE);
                    return CuratorTool.EXIT_USAGE;
            }
        });
    }

    private static int hold(CuratorFramework client, InterProcessMutex mutex, Supplier<String> node, String what,
            String releaseFile) throws Exception {
        mutex.acquire();
        CuratorTool.holding(what);
        reportAcquired(client, node.get());
        CuratorTool.awaitRelease(releaseFile == null ? null : Paths.get(releaseFile));
        CuratorTool.holding(null);
        mutex.release();
        CuratorTool.say("released");
        return 0;
    }

    private static int tryOnce(CuratorFramework client, InterProcessMutex mutex, Supplier<String> node,
            long timeoutMs) throws Exception {
        if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            CuratorTool.say("busy");
            return CuratorTool.EXIT_BUSY;
        }
        reportAcquired(client, node.get());
        mutex.release();
        return 0;
    }

    private static void reportAcquired(CuratorFramework client, String node) throws Exception {
        CuratorTool.say("acquired node=" + CuratorTool.nodeName(node) + " czxid=" + CuratorTool.czxid(client, node));
    }
}
