package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One {@link IDSet} used by two threads at once, or pushed twice, never hands an ID out twice:
 * takes and pushes of a set are serialized, and a push consumes the set.
 */
class IDSetSharingTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    private static final int SET_SIZE = 2_000_000;
    private static final int ROUNDS = 5;

    @Test
    void idsTakenWhileTheSetIsPushedAreNotFreeAgain() throws Exception {
        IDCategory cat = ServiceTest.freshCategory();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            service.createCategory(cat, CategorySpec.of(1, 100_000_000L));
            long takenTotal = 0;
            long twice = 0;
            for (int round = 0; round < ROUNDS; round++) {
                IDSet set = service.takeIDs(cat, SET_SIZE);
                long freeBefore = service.getPoolInfo(cat).countFreeIDs();
                long[] used = new long[SET_SIZE];
                int[] usedLen = {0};
                CountDownLatch started = new CountDownLatch(1);
                Thread taker = new Thread(() -> {
                    while (true) {
                        try {
                            used[usedLen[0]++] = set.takeID();
                        } catch (NoSuchElementException empty) {
                            usedLen[0]--;
                            return;
                        }
                        started.countDown();
                    }
                });
                taker.start();
                started.await();
                service.pushIDs(set);
                taker.join();
                PoolInfo after = service.getPoolInfo(cat);
                long returned = after.countFreeIDs() - freeBefore;
                // Guard: the thread was taking when the push began, and the push found IDs left.
                assertTrue(usedLen[0] > 0 && returned > 0, "taken " + usedLen[0] + ", pushed back " + returned);
                takenTotal += usedLen[0];
                twice += freeAmong(after, Arrays.copyOf(used, usedLen[0]));
                System.out.println("round " + round + ": taken " + usedLen[0] + ", pushed back " + returned
                        + " of " + SET_SIZE);
            }
            long free = service.getPoolInfo(cat).countFreeIDs();
            System.out.println("taken while pushing: " + takenTotal + " in " + ROUNDS + " rounds of " + SET_SIZE
                    + "; of them free in the pool again: " + twice + "; free: " + free);
            assertEquals(0, twice, "IDs taken from the set while it was pushed are free in the pool again");
            assertEquals(100_000_000L - takenTotal, free);
        }
    }

    @Test
    void aPushedSetIsConsumedAndTwoPushesAtOnceSucceedOnce() throws Exception {
        IDCategory cat = ServiceTest.freshCategory();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            service.createCategory(cat, CategorySpec.of(1, 1_000_000L));
            IDSet set = service.takeIDs(cat, 100);
            set.takeID();
            service.pushIDs(set);
            assertFalse(set.hasMoreIDs());
            IllegalStateException again = assertThrows(IllegalStateException.class, () -> service.pushIDs(set));
            assertTrue(again.getMessage().contains("already pushed") && again.getMessage().contains(cat.getName()),
                    again.getMessage());
            assertEquals(999_999, service.getPoolInfo(cat).countFreeIDs());

            for (int round = 0; round < 20; round++) {
                IDSet shared = service.takeIDs(cat, 1000);
                CountDownLatch gate = new CountDownLatch(2);
                List<Throwable> outcomes = java.util.Collections.synchronizedList(new ArrayList<>());
                Runnable push = () -> {
                    gate.countDown();
                    try {
                        gate.await();
                        service.pushIDs(shared);
                        outcomes.add(null);
                    } catch (Throwable t) {
                        outcomes.add(t);
                    }
                };
                Thread a = new Thread(push);
                Thread b = new Thread(push);
                a.start();
                b.start();
                a.join();
                b.join();
                long ok = outcomes.stream().filter(t -> t == null).count();
                long refused = outcomes.stream().filter(t -> t instanceof IllegalStateException).count();
                assertEquals(1, ok, "round " + round + ": " + outcomes);
                assertEquals(1, refused, "round " + round + ": " + outcomes);
                assertEquals(999_999, service.getPoolInfo(cat).countFreeIDs(), "round " + round);
            }
        }
    }

    /** How many of {@code ids} are free in {@code info}. */
    private static long freeAmong(PoolInfo info, long[] ids) {
        List<IDRange> free = info.getFreeRanges();
        long found = 0;
        for (long id : ids) {
            int lo = 0;
            int hi = free.size();
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (free.get(mid).getEndID() < id) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if (lo < free.size() && free.get(lo).getStartID() <= id) {
                found++;
            }
        }
        return found;
    }
}
