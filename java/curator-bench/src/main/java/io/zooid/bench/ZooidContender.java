package io.zooid.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import io.zooid.IDCategory;
import io.zooid.IDGeneratorOptions;
import io.zooid.IDGeneratorService;
import io.zooid.IDSet;

/**
 * zooid through its Java binding in the contention benchmark (benches/contention.rs, mode
 * {@code zooid-java}): {@code clients} threads in one JVM, each with its own
 * {@link IDGeneratorService} (its own ZooKeeper session), calling {@code takeIDs(category, batch)}
 * in a loop for a window and, with a push-back percentage, using the first IDs of each set and
 * pushing the rest back ({@code pushIDs}): the seeds' Hadoop task, as the Curator baseline
 * ({@link CuratorContender}) runs in one JVM too.
 *
 * <p>Same stdin/stdout protocol as examples/contender.rs, each client's lines together:
 * {@code ready} once every client made one warm-up operation, {@code go} on stdin starts the
 * window, then per client {@code push-errors N}, {@code push-latency L1 ...}, {@code kept S:E ...}
 * and {@code done OPS ERRORS IDS L1 ...} (take latencies in microseconds), then EOF on stdin
 * closes the services.
 *
 * <p>Usage: {@code ZooidContender CONNECT CATEGORY CLIENTS BATCH WINDOW_MS PUSH_PCT}, with the
 * native library named by {@code -Dzooid.library.path=DIR}.
 */
public final class ZooidContender {
    private ZooidContender() {}

    /** One client's window. */
    private static final class Client {
        final IDGeneratorService service;
        final Kept kept = new Kept();
        long ops;
        long errors;
        long pushErrors;
        long ids;
        final StringBuilder takeLatency = new StringBuilder();
        final StringBuilder pushLatency = new StringBuilder();

        Client(IDGeneratorService service) {
            this.service = service;
        }

        /** A take and its push-back; false when either failed. */
        boolean cycle(IDCategory category, int batch, int pushPct, boolean timed) {
            long t0 = System.nanoTime();
            IDSet set;
            try {
                set = service.takeIDs(category, batch);
            } catch (Exception e) {
                return false;
            }
            long took = (System.nanoTime() - t0) / 1000;
            long got = set.countIDs();
            long keep = got - got * pushPct / 100;
            for (long i = 0; i < keep; i++) {
                long id = set.takeID();
                kept.add(id, id);
            }
            if (timed) {
                ids += keep;
                takeLatency.append(' ').append(took);
            }
            if (pushPct > 0 && set.hasMoreIDs()) {
                long t1 = System.nanoTime();
                try {
                    service.pushIDs(set);
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
        IDCategory category = new IDCategory(args[1]);
        int clients = Integer.parseInt(args[2]);
        int batch = Integer.parseInt(args[3]);
        long windowNanos = Long.parseLong(args[4]) * 1_000_000L;
        int pushPct = Integer.parseInt(args[5]);

        List<Client> all = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            IDGeneratorOptions options = new IDGeneratorOptions().sessionTimeout(Duration.ofSeconds(10));
            Client client = new Client(IDGeneratorService.open(connect, options));
            if (!client.cycle(category, batch, pushPct, false)) {
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
                    if (client.cycle(category, batch, pushPct, true)) {
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
            c.service.close();
        }
    }
}
