package io.zooid.bench;

import java.io.BufferedReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * The Curator baseline of the contention benchmark (benches/contention.rs): {@code clients}
 * threads in one JVM, each with its own CuratorFramework (its own ZooKeeper session), calling
 * {@code DistributedAtomicLong.add(batch)} in a loop for a window.
 *
 * <p>Same stdin/stdout protocol as examples/contender.rs, one {@code done} line per client:
 * {@code ready} once every client has made one warm-up add, then {@code go} on stdin starts the
 * window, then per client {@code kept S:E ...} (the IDs its adds handed out, the warm-up's
 * included: those above the value before each add, up to the value after it, merged) and
 * {@code done TAKES ERRORS IDS L1 L2 ...} (latencies in microseconds), then EOF on stdin closes
 * the sessions. Curator cannot recycle: there are no pushes.
 *
 * <p>Usage: {@code CuratorContender CONNECT PATH CLIENTS BATCH WINDOW_MS [BASE_MS CAP_MS
 * ATTEMPTS]}: the optimistic loop's {@code BoundedExponentialBackoffRetry} (1 ms, 100 ms, 1000
 * when not given; the bench sweeps them).
 */
public final class CuratorContender {
    private CuratorContender() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String path = args[1];
        int clients = Integer.parseInt(args[2]);
        long batch = Long.parseLong(args[3]);
        long windowNanos = Long.parseLong(args[4]) * 1_000_000L;
        int baseMs = args.length > 5 ? Integer.parseInt(args[5]) : 1;
        int capMs = args.length > 6 ? Integer.parseInt(args[6]) : 100;
        int attempts = args.length > 7 ? Integer.parseInt(args[7]) : 1000;

        List<CuratorFramework> frameworks = new ArrayList<>();
        List<DistributedAtomicLong> counters = new ArrayList<>();
        List<Kept> kept = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            CuratorFramework cf = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(10_000)
                    .connectionTimeoutMs(10_000)
                    .retryPolicy(new ExponentialBackoffRetry(10, 5))
                    .build();
            cf.start();
            cf.blockUntilConnected();
            frameworks.add(cf);
            // The optimistic loop's retry policy: Curator's own default shape for the recipe,
            // bounded so that a take under contention keeps trying rather than failing.
            DistributedAtomicLong counter = new DistributedAtomicLong(
                    cf, path, new BoundedExponentialBackoffRetry(baseMs, capMs, attempts));
            AtomicValue<Long> warm = counter.add(batch);
            if (!warm.succeeded()) {
                throw new IllegalStateException("warm-up add did not succeed");
            }
            counters.add(counter);
            Kept k = new Kept();
            k.add(warm.preValue() + 1, warm.postValue());
            kept.add(k);
        }
        BufferedReader in = Protocol.stdin();
        Protocol.readyThenAwaitGo(in);
        String[] results = new String[clients];
        CountDownLatch finished = new CountDownLatch(clients);
        long start = System.nanoTime();
        for (int i = 0; i < clients; i++) {
            final int me = i;
            Thread t = new Thread(() -> {
                long takes = 0;
                long errors = 0;
                long ids = 0;
                StringBuilder lat = new StringBuilder();
                while (System.nanoTime() - start < windowNanos) {
                    long t0 = System.nanoTime();
                    try {
                        AtomicValue<Long> v = counters.get(me).add(batch);
                        if (v.succeeded()) {
                            takes++;
                            ids += batch;
                            kept.get(me).add(v.preValue() + 1, v.postValue());
                            lat.append(' ').append((System.nanoTime() - t0) / 1000);
                        } else {
                            errors++;
                        }
                    } catch (Exception e) {
                        errors++;
                    }
                }
                results[me] = kept.get(me) + "\ndone " + takes + " " + errors + " " + ids + lat;
                finished.countDown();
            });
            t.start();
        }
        finished.await();
        for (String r : results) {
            System.out.println(r);
        }
        System.out.flush();
        Protocol.awaitEof(in);
        for (CuratorFramework cf : frameworks) {
            cf.close();
        }
    }
}
