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
// Exit status and failures: see CuratorTool (76: the session was lost while
// the lease was held).

import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;

public final class CuratorSemaphore {
    private static final String USAGE = "CONNECT PATH N hold RELEASE_FILE | try TIMEOUT_MS";

    private CuratorSemaphore() {
    }

    public static void main(String[] args) {
        CuratorTool.named("CuratorSemaphore");
        if (args.length < 5) {
            CuratorTool.usage(USAGE);
        }
        String path = args[1];
        int parsed = 0;
        try {
            parsed = Integer.parseInt(args[2]);
        } catch (NumberFormatException e) {
            CuratorTool.usage(USAGE);
        }
        int leases = parsed;
        String mode = args[3];
        CuratorTool.run(args[0], client -> {
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, leases);
            switch (mode) {
                case "hold":
                    return hold(client, semaphore, path, args[4]);
                case "try":
                    return tryOnce(client, semaphore, path, Long.parseLong(args[4]));
                default:
                    CuratorTool.usage(USAGE);
                    return CuratorTool.EXIT_USAGE;
            }
        });
    }

    private static int hold(CuratorFramework client, InterProcessSemaphoreV2 semaphore, String path,
            String releaseFile) throws Exception {
        Lease lease = semaphore.acquire();
        CuratorTool.holding("a lease of " + path);
        reportAcquired(client, path, lease);
        CuratorTool.awaitRelease(Paths.get(releaseFile));
        CuratorTool.holding(null);
        semaphore.returnLease(lease);
        CuratorTool.say("released");
        return 0;
    }

    private static int tryOnce(CuratorFramework client, InterProcessSemaphoreV2 semaphore, String path,
            long timeoutMs) throws Exception {
        Lease lease = semaphore.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        if (lease == null) {
            CuratorTool.say("busy");
            return CuratorTool.EXIT_BUSY;
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
        CuratorTool.say("acquired node=" + CuratorTool.nodeName(node) + " czxid=" + CuratorTool.czxid(client, node));
    }
}
