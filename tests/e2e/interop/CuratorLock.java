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
// Exit status: 0 done, 64 usage, 69 ZooKeeper unreachable, 70 other failure,
// 75 busy, 76 the session was lost while the mutex was held. Failures print
// one "CuratorLock: ..." line on stderr.

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public final class CuratorLock {
    private static final int EXIT_USAGE = 64;
    private static final int EXIT_UNAVAILABLE = 69;
    private static final int EXIT_INTERNAL = 70;
    private static final int EXIT_BUSY = 75;
    private static final int EXIT_LOST = 76;

    // Exposes the path of the node the mutex created (protected in Curator).
    private static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String lockNodePath() {
            return getLockPath();
        }
    }

    private static volatile boolean held = false;

    public static void main(String[] args) {
        if (args.length < 3) {
            usage();
        }
        String connect = args[0];
        String path = args[1];
        String mode = args[2];
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(5000)
                .retryPolicy(new RetryNTimes(5, 200))
                .build();
        // Holding a mutex whose session is gone would be a lie: say so and stop.
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (held && state == ConnectionState.LOST) {
                die(EXIT_LOST, "the ZooKeeper session was lost while the mutex on " + path + " was held");
            }
        });
        client.start();
        int status;
        try {
            if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
                die(EXIT_UNAVAILABLE, "cannot connect to ZooKeeper at " + connect);
            }
            switch (mode) {
                case "hold":
                    status = hold(client, path, args.length > 3 ? Paths.get(args[3]) : null);
                    break;
                case "try":
                    if (args.length < 4) {
                        usage();
                    }
                    status = tryOnce(client, path, Long.parseLong(args[3]));
                    break;
                case "repeat":
                    if (args.length < 5) {
                        usage();
                    }
                    status = repeat(client, path, Integer.parseInt(args[3]),
                            Arrays.asList(args).subList(4, args.length));
                    break;
                case "children":
                    status = children(client, path);
                    break;
                default:
                    usage();
                    status = EXIT_USAGE;
            }
        } catch (Exception e) {
            die(EXIT_INTERNAL, e.toString());
            status = EXIT_INTERNAL;
        }
        client.close();
        System.exit(status);
    }

    private static int hold(CuratorFramework client, String path, Path releaseFile) throws Exception {
        Mutex mutex = new Mutex(client, path);
        long started = System.nanoTime();
        mutex.acquire();
        held = true;
        reportHeld(client, mutex, started);
        if (releaseFile == null) {
            drain(System.in);
        } else {
            // A test helper may poll: a release 10 ms late costs nothing here.
            while (!Files.exists(releaseFile)) {
                Thread.sleep(10);
            }
        }
        held = false;
        mutex.release();
        System.out.println("RELEASED");
        System.out.flush();
        return 0;
    }

    private static int tryOnce(CuratorFramework client, String path, long timeoutMs) throws Exception {
        Mutex mutex = new Mutex(client, path);
        long started = System.nanoTime();
        if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            System.out.println("BUSY");
            System.out.flush();
            return EXIT_BUSY;
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
            held = true;
            Stat stat = client.checkExists().forPath(mutex.lockNodePath());
            ProcessBuilder builder = new ProcessBuilder(command).inheritIO();
            builder.environment().put("DLOCK_FENCE", stat == null ? "gone" : Long.toString(stat.getCzxid()));
            int exit = builder.start().waitFor();
            held = false;
            mutex.release();
            if (exit != 0) {
                die(EXIT_INTERNAL, "round " + round + ": " + command.get(0) + " exited " + exit);
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
            Stat stat = client.checkExists().forPath(path + "/" + name);
            System.out.println(name + " czxid=" + (stat == null ? "gone" : Long.toString(stat.getCzxid())));
        }
        System.out.flush();
        return 0;
    }

    private static void reportHeld(CuratorFramework client, Mutex mutex, long started) throws Exception {
        String node = mutex.lockNodePath();
        Stat stat = client.checkExists().forPath(node);
        long waitedMs = (System.nanoTime() - started) / 1000000;
        System.out.println("HELD node=" + node.substring(node.lastIndexOf('/') + 1)
                + " czxid=" + (stat == null ? "gone" : Long.toString(stat.getCzxid()))
                + " waited_ms=" + waitedMs);
        System.out.flush();
    }

    private static void drain(InputStream in) {
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
            }
        } catch (IOException e) {
            // A broken stdin means the same as a closed one: let go.
        }
    }

    private static void usage() {
        die(EXIT_USAGE, "usage: CuratorLock CONNECT PATH hold [RELEASE_FILE] | try TIMEOUT_MS"
                + " | repeat N COMMAND [ARG...] | children");
    }

    private static void die(int status, String message) {
        System.err.println("CuratorLock: " + message);
        System.err.flush();
        Runtime.getRuntime().halt(status);
    }
}
