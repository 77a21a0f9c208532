// Apache Curator's InterProcessMutex, driven from the shell, for the tests that
// check that dlock's zk:// locks and Curator's exclude each other:
//
//   java -cp CP CuratorLock CONNECT PATH hold [RELEASE_FILE]
//       Waits as long as it takes for the mutex on PATH, prints
//       "HELD node=NAME czxid=N waited_ms=N", then holds it until RELEASE_FILE
//       exists (or, without one, until stdin reaches end of file: mind that a
//       background job of a script has /dev/null there), releases it and
//       prints "RELEASED".
//   java -cp CP CuratorLock CONNECT PATH try TIMEOUT_MS
//       One acquire with that timeout: "HELD ..." (released again at once, exit
//       0) or "BUSY" (exit 75, as dlock's busy status).
//   java -cp CP CuratorLock CONNECT PATH repeat N COMMAND [ARG...]
//       N times: wait for the mutex, run COMMAND (stdio inherited) with
//       DLOCK_FENCE set to the czxid of the mutex's node, release. Exit 70 if
//       COMMAND fails.
//   java -cp CP CuratorLock CONNECT PATH children
//       The children of PATH in lock order, one "NAME czxid=N" line each.
//
// Exit status and failures: see CuratorTool (76: the session was lost while
// the mutex was held).

import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.zookeeper.KeeperException;

public final class CuratorLock {
    private static final String USAGE = "CONNECT PATH hold [RELEASE_FILE] | try TIMEOUT_MS"
            + " | repeat N COMMAND [ARG...] | children";

    // Exposes the path of the node the mutex created (protected in Curator).
    private static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String lockNodePath() {
            return getLockPath();
        }
    }

    private CuratorLock() {
    }

    public static void main(String[] args) {
        CuratorTool.named("CuratorLock");
        if (args.length < 3) {
            CuratorTool.usage(USAGE);
        }
        String path = args[1];
        String mode = args[2];
        CuratorTool.run(args[0], client -> {
            switch (mode) {
                case "hold":
                    return hold(client, path, args.length > 3 ? args[3] : null);
                case "try":
                    if (args.length < 4) {
                        CuratorTool.usage(USAGE);
                    }
                    return tryOnce(client, path, Long.parseLong(args[3]));
                case "repeat":
                    if (args.length < 5) {
                        CuratorTool.usage(USAGE);
                    }
                    return repeat(client, path, Integer.parseInt(args[3]), Arrays.asList(args).subList(4, args.length));
                case "children":
                    return children(client, path);
                default:
                    CuratorTool.usage(USAGE);
                    return CuratorTool.EXIT_USAGE;
            }
        });
    }

    private static int hold(CuratorFramework client, String path, String releaseFile) throws Exception {
        Mutex mutex = new Mutex(client, path);
        long started = System.nanoTime();
        mutex.acquire();
        CuratorTool.holding("the mutex on " + path);
        reportHeld(client, mutex, started);
        CuratorTool.awaitRelease(releaseFile == null ? null : Paths.get(releaseFile));
        CuratorTool.holding(null);
        mutex.release();
        CuratorTool.say("RELEASED");
        return 0;
    }

    private static int tryOnce(CuratorFramework client, String path, long timeoutMs) throws Exception {
        Mutex mutex = new Mutex(client, path);
        long started = System.nanoTime();
        if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            CuratorTool.say("BUSY");
            return CuratorTool.EXIT_BUSY;
        }
        reportHeld(client, mutex, started);
        mutex.release();
        return 0;
    }

    private static int repeat(CuratorFramework client, String path, int rounds, List<String> command)
            throws Exception {
        Mutex mutex = new Mutex(client, path);
        for (int round = 0; round < rounds; round++) {
            mutex.acquire();
            CuratorTool.holding("the mutex on " + path);
            ProcessBuilder builder = new ProcessBuilder(command).inheritIO();
            builder.environment().put("DLOCK_FENCE", CuratorTool.czxid(client, mutex.lockNodePath()));
            int exit = builder.start().waitFor();
            CuratorTool.holding(null);
            mutex.release();
            if (exit != 0) {
                CuratorTool.die(CuratorTool.EXIT_INTERNAL, "round " + round + ": " + command.get(0) + " exited " + exit);
            }
        }
        return 0;
    }

    private static int children(CuratorFramework client, String path) throws Exception {
        List<String> names;
        try {
            names = new ArrayList<>(client.getChildren().forPath(path));
        } catch (KeeperException.NoNodeException e) {
            return 0;
        }
        // The order Curator's own mutex uses: by what follows "lock-".
        names.sort((a, b) -> StandardLockInternalsDriver.standardFixForSorting(a, "lock-")
                .compareTo(StandardLockInternalsDriver.standardFixForSorting(b, "lock-")));
        for (String name : names) {
            System.out.println(name + " czxid=" + CuratorTool.czxid(client, path + "/" + name));
        }
        System.out.flush();
        return 0;
    }

    private static void reportHeld(CuratorFramework client, Mutex mutex, long started) throws Exception {
        String node = mutex.lockNodePath();
        String czxid = CuratorTool.czxid(client, node);
        long waitedMs = (System.nanoTime() - started) / 1000000;
        CuratorTool.say("HELD node=" + CuratorTool.nodeName(node) + " czxid=" + czxid + " waited_ms=" + waitedMs);
    }
}
