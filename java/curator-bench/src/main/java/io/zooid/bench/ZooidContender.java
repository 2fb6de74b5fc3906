package io.zooid.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

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
 * <p>Same stdin/stdout protocol as examples/contender.rs ({@link Protocol}), each client's lines
 * together ({@link Recycler#runWindow}).
 *
 * <p>Usage: {@code ZooidContender CONNECT CATEGORY CLIENTS BATCH WINDOW_MS PUSH_PCT}, with the
 * native library named by {@code -Dzooid.library.path=DIR}.
 */
public final class ZooidContender {
    private ZooidContender() {}

    /** One client's window. */
    private static final class Client extends Recycler {
        final IDGeneratorService service;
        final IDCategory category;
        final int batch;
        final int pushPct;

        Client(IDGeneratorService service, IDCategory category, int batch, int pushPct) {
            this.service = service;
            this.category = category;
            this.batch = batch;
            this.pushPct = pushPct;
        }

        @Override
        boolean cycle(boolean timed) {
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
            tookIn(took, keep, timed);
            return pushPct == 0 || !set.hasMoreIDs() || pushBack(() -> service.pushIDs(set), timed);
        }

        @Override
        void close() {
            service.close();
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
            Client client = new Client(IDGeneratorService.open(connect, options), category, batch, pushPct);
            all.add(client);
        }
        Recycler.serve(all, windowNanos);
    }
}
