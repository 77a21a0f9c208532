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
// Exit status: 0 done, 64 usage, 69 ZooKeeper unreachable, 70 other failure,
// 75 busy, 76 the session was lost while the lock was held. Failures print
// one "CuratorReadWrite: ..." line on stderr.

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public final class CuratorReadWrite {
    private static final int EXIT_USAGE = 64;
    private static final int EXIT_UNAVAILABLE = 69;
    private static final int EXIT_INTERNAL = 70;
    private static final int EXIT_BUSY = 75;
    private static final int EXIT_LOST = 76;

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

    private static volatile boolean held = false;

    public static void main(String[] args) {
        if (args.length < 4) {
            usage();
        }
        String connect = args[0];
        String path = args[1];
        String kind = args[2];
        String mode = args[3];
        if (!kind.equals("read") && !kind.equals("write")) {
            usage();
        }
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(5000)
                .retryPolicy(new RetryNTimes(5, 200))
                .build();
        // Holding a lock whose session is gone would be a lie: say so and stop.
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (held && state == ConnectionState.LOST) {
                die(EXIT_LOST, "the ZooKeeper session was lost while the " + kind + " lock on " + path
                        + " was held");
            }
        });
        client.start();
        int status = EXIT_USAGE;
        try {
            if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
                die(EXIT_UNAVAILABLE, "cannot connect to ZooKeeper at " + connect);
            }
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
            switch (mode) {
                case "hold":
                    status = hold(client, mutex, node, args.length > 4 ? Paths.get(args[4]) : null);
                    break;
                case "try":
                    if (args.length < 5) {
                        usage();
                    }
                    status = tryOnce(client, mutex, node, Long.parseLong(args[4]));
                    break;
                default:
                    usage();
            }
        } catch (Exception e) {
            die(EXIT_INTERNAL, e.toString());
        }
        client.close();
        System.exit(status);
    }

    private static int hold(CuratorFramework client, InterProcessMutex mutex, Supplier<String> node,
            Path releaseFile)
            throws Exception {
        mutex.acquire();
        held = true;
        reportAcquired(client, node.get());
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
        System.out.println("released");
        System.out.flush();
        return 0;
    }

    private static int tryOnce(CuratorFramework client, InterProcessMutex mutex, Supplier<String> node,
            long timeoutMs)
            throws Exception {
        if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            System.out.println("busy");
            System.out.flush();
            return EXIT_BUSY;
        }
        reportAcquired(client, node.get());
        mutex.release();
        return 0;
    }

    private static void reportAcquired(CuratorFramework client, String node) throws Exception {
        Stat stat = client.checkExists().forPath(node);
        System.out.println("acquired node=" + node.substring(node.lastIndexOf('/') + 1)
                + " czxid=" + (stat == null ? "gone" : Long.toString(stat.getCzxid())));
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
        die(EXIT_USAGE, "usage: CuratorReadWrite CONNECT PATH read|write hold [RELEASE_FILE] | try TIMEOUT_MS");
    }

    private static void die(int status, String message) {
        System.err.println("CuratorReadWrite: " + message);
        System.err.flush();
        Runtime.getRuntime().halt(status);
    }
}
