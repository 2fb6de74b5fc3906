package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The prefetching source on a real ZooKeeper: uniqueness, conservation, no native call per ID. */
class IDSourceTest {
    private static final AtomicInteger NEXT = new AtomicInteger();
    private static final long LAST = 100_000_000L;

    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    static IDCategory freshCategory() {
        return new IDCategory("/zooid-java-test/source/c" + NEXT.incrementAndGet());
    }

    @Test
    void threadsAndSourcesNeverShareAnIdAndClosePushesBackTheRest() throws Exception {
        IDCategory cat = freshCategory();
        IDSourceOptions options = new IDSourceOptions().batch(100, 50, 1600).chunk(64);
        int threads = 6;
        int perThread = 20_000;
        try (IDGeneratorService a = IDGeneratorService.open(zk.connectString());
                IDGeneratorService b = IDGeneratorService.open(zk.connectString())) {
            a.createCategory(cat, CategorySpec.of(1, LAST));
            IDSource[] sources = {a.openSource(cat, options), b.openSource(cat, options)};
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<long[]>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                IDSource source = sources[t % 2];
                Callable<long[]> draw = () -> {
                    long[] ids = new long[perThread];
                    for (int i = 0; i < perThread; i++) {
                        ids[i] = source.next();
                    }
                    return ids;
                };
                results.add(pool.submit(draw));
            }
            Set<Long> seen = new HashSet<>();
            for (Future<long[]> result : results) {
                for (long id : result.get()) {
                    assertTrue(seen.add(id), "ID " + id + " handed out twice");
                }
            }
            pool.shutdown();
            long total = (long) threads * perThread;
            assertEquals(total, seen.size());
            for (IDSource source : sources) {
                long[] stats = source.stats();
                assertEquals(total / 2, stats[0], "handed out");
                assertTrue(stats[1] > 5, "refilled in the background: " + stats[1]);
                // One native call per run of up to 64 IDs (fewer IDs per run at batch ends).
                assertTrue(source.nativeCallsForTest() <= total / 2 / 64 + 2 * stats[1] + 1,
                        "native calls " + source.nativeCallsForTest());
                source.close();
                source.close(); // a second close does nothing
                assertThrows(IllegalStateException.class, source::next);
            }
            assertEquals(LAST - total, a.getPoolInfo(cat).countFreeIDs(),
                    "close pushes back every ID not handed out, prefetched ones included");
        }
    }

    @Test
    void closePushesBackTheJavaRunTooAndOutlivesTheService() throws Exception {
        IDCategory cat = freshCategory();
        IDSource source;
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            service.createCategory(cat, CategorySpec.of(1, LAST));
            source = service.openSource(cat, new IDSourceOptions().chunk(1_000));
            for (int i = 1; i <= 10; i++) {
                assertEquals(i, source.next());
            }
            assertEquals(1, source.nativeCallsForTest(), "10 IDs from one run");
        }
        // The service is closed; the source still holds the session.
        source.close();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            PoolInfo info = service.getPoolInfo(cat);
            assertEquals(LAST - 10, info.countFreeIDs());
            assertEquals("[11:" + LAST + "]", info.getFreeRanges().toString());
        }
    }

    /** A run the native side could not write back (an array too short) is refused before it is taken. */
    @Test
    void aRunThatCannotBeWrittenBackIsNotTaken() throws Exception {
        IDCategory cat = freshCategory();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            service.createCategory(cat, CategorySpec.of(1, LAST));
            IDSource source = service.openSource(cat, new IDSourceOptions().chunk(16));
            assertThrows(IllegalArgumentException.class, () -> source.withHandle(h -> {
                ZooidNative.sourceNextRun(h, 16, new long[1]);
                return null;
            }));
            assertEquals(1, source.next(), "the run refused was taken from the source");
            source.close();
            assertEquals(LAST - 1, service.getPoolInfo(cat).countFreeIDs());
        }
    }

    @Test
    void misuseAndMissingCategories() throws Exception {
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            assertThrows(CategoryNotFoundException.class,
                    () -> service.openSource(new IDCategory("/zooid-java-test/source/missing")));
            assertThrows(NullPointerException.class, () -> service.openSource(null));
            assertThrows(IllegalArgumentException.class, () -> new IDSourceOptions().batch(10, 0, 20));
            assertThrows(IllegalArgumentException.class, () -> new IDSourceOptions().refillWhenUsed(0));
            assertThrows(IllegalArgumentException.class,
                    () -> new IDSourceOptions().targetBatchDuration(Duration.ZERO));
            assertThrows(IllegalArgumentException.class, () -> new IDSourceOptions().chunk(0));
        }
    }

    /** The server goes away: local IDs keep coming; the failure shows only when they run out. */
    @Test
    void aFailedRefillSurfacesOnlyWhenTheLocalIdsRunOut() throws Exception {
        IDCategory cat = freshCategory();
        try (TestZooKeeper own = TestZooKeeper.start();
                IDGeneratorService service = IDGeneratorService.open(own.connectString(),
                        new IDGeneratorOptions()
                                .sessionTimeout(Duration.ofSeconds(2))
                                .operationTimeout(Duration.ofSeconds(1)))) {
            service.createCategory(cat, CategorySpec.of(1, LAST));
            IDSource source = service.openSource(cat, new IDSourceOptions().batch(200, 200, 200).chunk(16));
            own.stop();
            for (int i = 1; i <= 200; i++) {
                assertEquals(i, source.next(), "local IDs are handed out with the server down");
            }
            long t0 = System.nanoTime();
            IDGeneratorException err = assertThrows(IDGeneratorException.class, source::next);
            System.out.println("refill failure after " + (System.nanoTime() - t0) / 1_000_000 + " ms: " + err);
            assertTrue(err instanceof ConnectionLostException || err instanceof OutcomeUnknownException
                            || err instanceof OperationTimeoutException,
                    "unexpected " + err);
            assertTrue(source.stats()[2] >= 1, "the refill failed");
            // Every ID was handed out: nothing to push back. A refill in doubt (its write on the
            // wire when the server went) makes the close report it.
            t0 = System.nanoTime();
            if (err instanceof OutcomeUnknownException) {
                assertThrows(OutcomeUnknownException.class, source::close);
            } else {
                source.close();
            }
            System.out.println("close after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
        }
    }
}
