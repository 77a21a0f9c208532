// What the Curator helpers of the interop tests (CuratorLock, CuratorReadWrite,
// CuratorSemaphore) share: the client and its connection, the watch on the
// session while something is held, waiting for the release, the czxid of a
// node, and how they fail. Compiled with them; not run by itself.
//
// Exit status of every helper: 0 done, 64 usage, 69 ZooKeeper unreachable,
// 70 other failure, 75 busy, 76 the session was lost while something was
// held. Failures print one "PROGRAM: ..." line on stderr.

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

final class CuratorTool {
    static final int EXIT_USAGE = 64;
    static final int EXIT_UNAVAILABLE = 69;
    static final int EXIT_INTERNAL = 70;
    static final int EXIT_BUSY = 75;
    static final int EXIT_LOST = 76;

    // A helper's body: its exit status, or an exception (70).
    interface Body {
        int run(CuratorFramework client) throws Exception;
    }

    private static volatile String program = "Curator";
    // What is held, for the message when the session goes ("the mutex on /x"); null when nothing is.
    private static volatile String held = null;

    private CuratorTool() {
    }

    // The helper's name, for its messages: first thing in main().
    static void named(String name) {
        program = name;
    }

    // Connects to CONNECT (10 s at most, else 69), runs `body`, closes the
    // client and exits with the body's status.
    static void run(String connect, Body body) {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(5000)
                .retryPolicy(new RetryNTimes(5, 200))
                .build();
        // Holding a lock whose session is gone would be a lie: say so and stop.
        client.getConnectionStateListenable().addListener((c, state) -> {
            String what = held;
            if (what != null && state == ConnectionState.LOST) {
                die(EXIT_LOST, "the ZooKeeper session was lost while " + what + " was held");
            }
        });
        client.start();
        int status = EXIT_INTERNAL;
        try {
            if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
                die(EXIT_UNAVAILABLE, "cannot connect to ZooKeeper at " + connect);
            }
            status = body.run(client);
        } catch (Exception e) {
            die(EXIT_INTERNAL, e.toString());
        }
        client.close();
        System.exit(status);
    }

    // `what` is held from now on (null: nothing is).
    static void holding(String what) {
        held = what;
    }

    // Until RELEASE_FILE exists or, without one, until stdin reaches end of
    // file (mind that a background job of a script has /dev/null there).
    static void awaitRelease(Path releaseFile) throws InterruptedException {
        if (releaseFile == null) {
            drain(System.in);
            return;
        }
        // A test helper may poll: a release 10 ms late costs nothing here.
        while (!Files.exists(releaseFile)) {
            Thread.sleep(10);
        }
    }

    // The czxid of the node at `path`, or "gone".
    static String czxid(CuratorFramework client, String path) throws Exception {
        Stat stat = client.checkExists().forPath(path);
        return stat == null ? "gone" : Long.toString(stat.getCzxid());
    }

    // The last level of `path`.
    static String nodeName(String path) {
        return path.substring(path.lastIndexOf('/') + 1);
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void usage(String text) {
        die(EXIT_USAGE, "usage: " + program + " " + text);
    }

    static void die(int status, String message) {
        System.err.println(program + ": " + message);
        System.err.flush();
        Runtime.getRuntime().halt(status);
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
}
