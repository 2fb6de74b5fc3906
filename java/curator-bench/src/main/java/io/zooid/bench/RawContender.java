package io.zooid.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * The raw floor of the contention benchmark through ZooKeeper's own Java client (benches/
 * contention.rs, mode {@code raw-java}): {@code clients} threads in one JVM, each with its own
 * {@link ZooKeeper} session, as {@link ZooidContender} and {@link CuratorContender} run. A take
 * is one sequential {@code create} under {@code PARENT} (its sequence number names the batch), a
 * push one {@code delete} of it: the same writes as examples/contender.rs's {@code raw} mode,
 * through the client a Java user of ZooKeeper has.
 *
 * <p>Same stdin/stdout protocol as {@link ZooidContender}.
 *
 * <p>Usage: {@code RawContender CONNECT PARENT CLIENTS BATCH WINDOW_MS PUSH_PCT}.
 */
public final class RawContender {
    private RawContender() {}

    /** One client's window. */
    private static final class Client {
        final ZooKeeper zk;
        final String prefix;
        final Kept kept = new Kept();
        long ops;
        long errors;
        long pushErrors;
        long ids;
        final StringBuilder takeLatency = new StringBuilder();
        final StringBuilder pushLatency = new StringBuilder();

        Client(ZooKeeper zk, String parent) {
            this.zk = zk;
            this.prefix = parent + "/t-";
        }

        /** A take and its push-back; false when either failed. */
        boolean cycle(long batch, int pushPct, boolean timed) {
            long t0 = System.nanoTime();
            String node;
            try {
                node = zk.create(prefix, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE,
                        CreateMode.PERSISTENT_SEQUENTIAL);
            } catch (Exception e) {
                return false;
            }
            long took = (System.nanoTime() - t0) / 1000;
            long sequence = Long.parseLong(node.substring(prefix.length()));
            long keep = batch - batch * pushPct / 100;
            long start = sequence * batch + 1;
            if (keep > 0) {
                kept.add(start, start + keep - 1);
            }
            if (timed) {
                ids += keep;
                takeLatency.append(' ').append(took);
            }
            if (pushPct > 0) {
                long t1 = System.nanoTime();
                try {
                    zk.delete(node, -1);
                } catch (Exception e) {
                    if (timed) {
                        pushErrors++;
                    }
                    return false;
                }
                if (timed) {
                    pushLatency.append(' ').append((System.nanoTime() - t1) / 1000);
                }
            }
            return true;
        }
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String parent = args[1];
        int clients = Integer.parseInt(args[2]);
        long batch = Long.parseLong(args[3]);
        long windowNanos = Long.parseLong(args[4]) * 1_000_000L;
        int pushPct = Integer.parseInt(args[5]);

        List<Client> all = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper zk = new ZooKeeper(connect, 10_000, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (!connected.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no session with " + connect);
            }
            Client client = new Client(zk, parent);
            if (!client.cycle(batch, pushPct, false)) {
                throw new IllegalStateException("warm-up take failed");
            }
            all.add(client);
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String go = in.readLine();
        if (!"go".equals(go)) {
            throw new IllegalStateException("expected go, got " + go);
        }
        CountDownLatch finished = new CountDownLatch(clients);
        long start = System.nanoTime();
        for (Client client : all) {
            Thread t = new Thread(() -> {
                while (System.nanoTime() - start < windowNanos) {
                    if (client.cycle(batch, pushPct, true)) {
                        client.ops++;
                    } else {
                        client.errors++;
                    }
                }
                finished.countDown();
            });
            t.start();
        }
        finished.await();
        for (Client c : all) {
            System.out.println("push-errors " + c.pushErrors);
            System.out.println("push-latency" + c.pushLatency);
            System.out.println(c.kept);
            System.out.println("done " + c.ops + " " + c.errors + " " + c.ids + c.takeLatency);
        }
        System.out.flush();
        while (in.readLine() != null) {
            // wait for EOF
        }
        for (Client c : all) {
            c.zk.close();
        }
    }
}
