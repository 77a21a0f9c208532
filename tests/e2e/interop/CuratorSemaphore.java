// Apache Curator's InterProcessSemaphoreV2, driven from the shell, for the
// test that checks that dlock's zk:// --limit N and Curator's semaphore of
// N leases on the same znode share the N slots:
//
//   java -cp CP CuratorSemaphore CONNECT PATH N hold RELEASE_FILE
//       Waits as long as it takes for one lease of
//       InterProcessSemaphoreV2(PATH, N), prints "acquired node=NAME
//       czxid=N", holds it until RELEASE_FILE exists, returns it and prints
//       "released".
//   java -cp CP CuratorSemaphore CONNECT PATH N try TIMEOUT_MS
//       One acquire with that timeout: "acquired ..." (returned again at
//       once, exit 0) or "busy" (exit 75, as dlock's busy status).
//
// Exit status: 0 done, 64 usage, 69 ZooKeeper unreachable, 70 other failure,
// 75 busy, 76 the session was lost while the lease was held. Failures print
// one "CuratorSemaphore: ..." line on stderr.

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public final class CuratorSemaphore {
    private static final int EXIT_USAGE = 64;
    private static final int EXIT_UNAVAILABLE = 69;
    private static final int EXIT_INTERNAL = 70;
    private static final int EXIT_BUSY = 75;
    private static final int EXIT_LOST = 76;

    private static volatile boolean held = false;

    public static void main(String[] args) {
        if (args.length < 5) {
            usage();
        }
        String connect = args[0];
        String path = args[1];
        int leases = 0;
        try {
            leases = Integer.parseInt(args[2]);
        } catch (NumberFormatException e) {
            usage();
        }
        String mode = args[3];
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(5000)
                .retryPolicy(new RetryNTimes(5, 200))
                .build();
        // Holding a lease whose session is gone would be a lie: say so and stop.
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (held && state == ConnectionState.LOST) {
                die(EXIT_LOST, "the ZooKeeper session was lost while a lease of " + path + " was held");
            }
        });
        client.start();
        int status = EXIT_USAGE;
        try {
            if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
                die(EXIT_UNAVAILABLE, "cannot connect to ZooKeeper at " + connect);
            }
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, leases);
            switch (mode) {
                case "hold":
                    status = hold(client, semaphore, path, Paths.get(args[4]));
                    break;
                case "try":
                    status = tryOnce(client, semaphore, path, Long.parseLong(args[4]));
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

    private static int hold(CuratorFramework client, InterProcessSemaphoreV2 semaphore, String path,
            Path releaseFile)
            throws Exception {
        Lease lease = semaphore.acquire();
        held = true;
        reportAcquired(client, path, lease);
        // A test helper may poll: a release 10 ms late costs nothing here.
        while (!Files.exists(releaseFile)) {
            Thread.sleep(10);
        }
        held = false;
        semaphore.returnLease(lease);
        System.out.println("released");
        System.out.flush();
        return 0;
    }

    private static int tryOnce(CuratorFramework client, InterProcessSemaphoreV2 semaphore, String path,
            long timeoutMs)
            throws Exception {
        Lease lease = semaphore.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        if (lease == null) {
            System.out.println("busy");
            System.out.flush();
            return EXIT_BUSY;
        }
        reportAcquired(client, path, lease);
        semaphore.returnLease(lease);
        return 0;
    }

    // Lease.getNodeName() is the node's name in PATH/leases (the whole path in some versions).
    private static void reportAcquired(CuratorFramework client, String path, Lease lease) throws Exception {
        String node = lease.getNodeName();
        if (!node.startsWith("/")) {
            node = path + "/leases/" + node;
        }
        Stat stat = client.checkExists().forPath(node);
        System.out.println("acquired node=" + node.substring(node.lastIndexOf('/') + 1)
                + " czxid=" + (stat == null ? "gone" : Long.toString(stat.getCzxid())));
        System.out.flush();
    }

    private static void usage() {
        die(EXIT_USAGE, "usage: CuratorSemaphore CONNECT PATH N hold RELEASE_FILE | try TIMEOUT_MS");
    }

    private static void die(int status, String message) {
        System.err.println("CuratorSemaphore: " + message);
        System.err.flush();
        Runtime.getRuntime().halt(status);
    }
}
