package io.zooid.bench;

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
    private static final class Client extends Recycler {
        final ZooKeeper zk;
        final String prefix;
        final long batch;
        final int pushPct;

        Client(ZooKeeper zk, String parent, long batch, int pushPct) {
            this.zk = zk;
            this.prefix = parent + "/t-";
            this.batch = batch;
            this.pushPct = pushPct;
        }

        @Override
        boolean cycle(boolean timed) {
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
            tookIn(took, keep, timed);
            return pushPct == 0 || pushBack(() -> zk.delete(node, -1), timed);
        }

        @Override
        void close() throws InterruptedException {
            zk.close();
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
            Client client = new Client(zk, parent, batch, pushPct);
            all.add(client);
        }
        Recycler.serve(all, windowNanos);
    }
}
