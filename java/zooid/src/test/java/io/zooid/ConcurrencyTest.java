package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Many task threads sharing one service (and several services), as map tasks do. */
class ConcurrencyTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    /**
     * Threads take batches, use a random part of each, and push back the rest, like the seed's
     * publishEvents. No ID is ever used twice, and every ID is either used or free at the end.
     */
    @Test
    void threadsSharingServicesNeverUseAnIdTwiceAndLoseNone() throws Exception {
        threadsTakeUseAndPush(new IDCategory("/zooid-java-test/concurrency/did"), 0);
    }

    /** The same on a category in block allocation: fresh blocks of 500 IDs, pushed IDs first. */
    @Test
    void theSameOnACategoryInBlockAllocation() throws Exception {
        threadsTakeUseAndPush(new IDCategory("/zooid-java-test/concurrency/blocks"), 500);
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            IDCategory fresh = new IDCategory("/zooid-java-test/concurrency/blocks-order");
            service.createCategory(fresh, CategorySpec.of(1, 1_000_000).blocks(100));
            IDSet first = service.takeIDs(fresh, 100);
            assertEquals(1, first.takeID());
            IDSet second = service.takeIDs(fresh, 100);
            assertEquals(101, second.takeID());
            service.pushIDs(first);
            assertEquals(2, service.takeIDs(fresh, 10).takeID(), "pushed IDs are handed out first");
        }
    }

    private void threadsTakeUseAndPush(IDCategory cat, long blockSize) throws Exception {
        final int total = 200_000;
        final int threads = 8;
        final int rounds = 25;
        BitSet used = new BitSet(total + 1);
        AtomicLong usedCount = new AtomicLong();
        try (IDGeneratorService shared = IDGeneratorService.open(zk.connectString());
                IDGeneratorService second = IDGeneratorService.open(zk.connectString())) {
            if (blockSize > 0) {
                shared.createCategory(cat, CategorySpec.of(1, total).blocks(blockSize));
            } else {
                shared.createCategory(cat, CategorySpec.of(1, total));
            }
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                final IDGeneratorService service = t % 4 == 3 ? second : shared;
                final Random random = new Random(t);
                results.add(pool.submit(() -> {
                    start.await();
                    for (int round = 0; round < rounds; round++) {
                        IDSet ids = service.takeIDs(cat, 1 + random.nextInt(1000));
                        long use = random.nextInt((int) ids.countIDs() + 1);
                        List<Long> mine = new ArrayList<>();
                        for (long i = 0; i < use; i++) {
                            mine.add(ids.takeID());
                        }
                        synchronized (used) {
                            for (long id : mine) {
                                if (used.get((int) id)) {
                                    fail("ID " + id + " handed out twice");
                                }
                                used.set((int) id);
                            }
                        }
                        usedCount.addAndGet(mine.size());
                        service.pushIDs(ids);
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : results) {
                f.get(5, TimeUnit.MINUTES);
            }
            pool.shutdown();
            PoolInfo info = shared.getPoolInfo(cat);
            assertEquals(total - usedCount.get(), info.countFreeIDs(), "every unused ID went back");
            for (IDRange free : info.getFreeRanges()) {
                for (long id = free.getStartID(); id <= free.getEndID(); id++) {
                    assertTrue(!used.get((int) id), "ID " + id + " is both used and free");
                }
            }
            assertEquals(usedCount.get(), used.cardinality());
        }
    }

    /** Closing while other threads are mid-call never crashes: calls finish or throw IllegalState. */
    @Test
    void closeWhileThreadsAreCallingIsSafe() throws Exception {
        IDCategory cat = new IDCategory("/zooid-java-test/concurrency/close");
        IDGeneratorService service = IDGeneratorService.open(zk.connectString());
        service.createCategory(cat, CategorySpec.of(1, Long.MAX_VALUE / 2));
        ExecutorService pool = Executors.newFixedThreadPool(6);
        AtomicInteger succeeded = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        CountDownLatch running = new CountDownLatch(6);
        List<Future<?>> results = new ArrayList<>();
        for (int t = 0; t < 6; t++) {
            results.add(pool.submit(() -> {
                running.countDown();
                while (true) {
                    try {
                        IDSet ids = service.takeIDs(cat, 10);
                        ids.takeID();
                        service.pushIDs(ids);
                        succeeded.incrementAndGet();
                    } catch (IllegalStateException closed) {
                        refused.incrementAndGet();
                        return null;
                    }
                }
            }));
        }
        running.await();
        Thread.sleep(300);
        service.close();
        service.close();
        for (Future<?> f : results) {
            f.get(1, TimeUnit.MINUTES);
        }
        pool.shutdown();
        assertTrue(succeeded.get() > 0);
        assertEquals(6, refused.get(), "every thread saw the close as IllegalStateException");
    }
}
