package io.zooid;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link WorkQueue} against a real ZooKeeper: order, release, complete, close, bad input, threads. */
class WorkQueueTest {
    private static final AtomicInteger NEXT = new AtomicInteger();

    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    private static IDGeneratorService service;

    @BeforeAll
    static void open() throws Exception {
        service = IDGeneratorService.open(zk.connectString());
    }

    @AfterAll
    static void close() {
        if (service != null) {
            service.close();
        }
    }

    static String freshQueue() {
        return "/zooid-java-test/queue/q" + NEXT.incrementAndGet();
    }

    static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    static String text(WorkQueue.Claim claim) {
        return new String(claim.getData(), StandardCharsets.UTF_8);
    }

    /** Items come out in put order, with the names and data put gave them; complete removes them. */
    @Test
    void putClaimCompleteInOrder() throws Exception {
        String path = freshQueue();
        try (WorkQueue queue = WorkQueue.open(service, path)) {
            assertEquals(path, queue.getPath());
            List<String> names = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                names.add(queue.put(bytes("item " + i)));
            }
            long previous = -1;
            for (int i = 0; i < 5; i++) {
                try (WorkQueue.Claim claim = queue.claim(10, TimeUnit.SECONDS)) {
                    assertNotNull(claim);
                    assertEquals(names.get(i), claim.getItem());
                    assertEquals("item " + i, text(claim));
                    assertTrue(claim.getSequence() > previous);
                    previous = claim.getSequence();
                    assertFalse(claim.isLost());
                    claim.complete();
                    assertTrue(claim.isFinished());
                    assertEquals("item " + i, text(claim), "data stays readable after complete");
                    assertThrows(IllegalStateException.class, claim::complete);
                    assertThrows(IllegalStateException.class, claim::release);
                }
            }
            assertNull(queue.claim(0, TimeUnit.SECONDS), "every item was completed");
            try (ZooKeeper client = zk.client()) {
                assertEquals(Collections.emptyList(), client.getChildren(path + "/items", false));
                assertEquals(Collections.emptyList(), client.getChildren(path + "/locks", false));
            }
        }
    }

    /** A released item, and the item of a claim closed without completing, is handed out again. */
    @Test
    void releaseAndCloseGiveTheItemBack() throws Exception {
        try (WorkQueue queue = WorkQueue.open(service, freshQueue())) {
            String first = queue.put(bytes("first"));
            String second = queue.put(bytes("second"));
            WorkQueue.Claim claim = queue.claim(10, TimeUnit.SECONDS);
            assertEquals(first, claim.getItem());
            claim.release();
            assertTrue(claim.isLost(), "a finished claim holds nothing");
            claim.close(); // finished already: nothing to do

            try (WorkQueue.Claim again = queue.claim(10, TimeUnit.SECONDS)) {
                assertEquals(first, again.getItem(), "released: first in line again");
                try (WorkQueue.Claim next = queue.claim(0, TimeUnit.SECONDS)) {
                    assertEquals(second, next.getItem());
                    assertNull(queue.claim(0, TimeUnit.SECONDS), "both are claimed");
                    // next is closed here without completing: released.
                }
                try (WorkQueue.Claim back = queue.claim(10, TimeUnit.SECONDS)) {
                    assertNotNull(back, "the closed claim's item came back");
                    assertEquals(second, back.getItem());
                    back.complete();
                }
                again.complete();
            }
            assertNull(queue.claim(0, TimeUnit.SECONDS));
        }
    }

    /** A claim waits for its timeout, and a waiting claim gets the next put. */
    @Test
    void claimTimesOutOrGetsTheNextPut() throws Exception {
        try (WorkQueue queue = WorkQueue.open(service, freshQueue())) {
            queue.put(bytes("x"));
            queue.claim(0, TimeUnit.SECONDS).complete();
            long started = System.nanoTime();
            assertNull(queue.claim(300, TimeUnit.MILLISECONDS));
            long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertTrue(waitedMillis >= 290 && waitedMillis < 5000, "waited " + waitedMillis + " ms");
            System.out.println("WorkQueue claim timeout of 300 ms returned after " + waitedMillis + " ms");

            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<String> waiting = pool.submit(() -> {
                    try (WorkQueue.Claim claim = queue.claim(20, TimeUnit.SECONDS)) {
                        claim.complete();
                        return text(claim);
                    }
                });
                queue.put(bytes("late"));
                assertEquals("late", waiting.get(30, TimeUnit.SECONDS));
            } finally {
                pool.shutdownNow();
            }
        }
    }

    /** Limits, a missing queue, misuse, and close semantics. */
    @Test
    void badInput() throws Exception {
        WorkQueueOptions small = new WorkQueueOptions()
                .maxItems(2)
                .maxItemBytes(8)
                .operationTimeout(Duration.ofSeconds(20))
                .identity("java-test");
        String path = freshQueue();
        try (WorkQueue queue = WorkQueue.open(service, path, small)) {
            TooLargeException tooLarge = assertThrows(TooLargeException.class, () -> queue.put(bytes("123456789")));
            assertEquals(ErrorCode.TOO_LARGE, tooLarge.getCode());
            queue.put(bytes("12345678"));
            queue.put(new byte[0]);
            QueueFullException full = assertThrows(QueueFullException.class, () -> queue.put(bytes("3")));
            assertEquals(path, full.getCategory());
            assertThrows(NullPointerException.class, () -> queue.put(null));
            assertThrows(IllegalArgumentException.class, () -> queue.claim(-1, TimeUnit.SECONDS));
            assertThrows(NullPointerException.class, () -> queue.claim(1, null));
            try (WorkQueue.Claim claim = queue.claim(0, TimeUnit.SECONDS)) {
                claim.complete();
            }
            queue.put(bytes("3")); // room again
        }

        // Workers start before producers: a claim on a queue never put to finds nothing (it does
        // not fail), and a consumer waiting on it gets the first item put.
        String later = freshQueue();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (WorkQueue missing = WorkQueue.open(service, later);
                WorkQueue producer = WorkQueue.open(service, later)) {
            assertNull(missing.claim(0, TimeUnit.SECONDS));
            Future<byte[]> early = pool.submit(() -> {
                try (WorkQueue.Claim claim = missing.claim(20, TimeUnit.SECONDS)) {
                    assertNotNull(claim, "the waiting consumer got the first item");
                    byte[] data = claim.getData();
                    claim.complete();
                    return data;
                }
            });
            Thread.sleep(1000);
            assertFalse(early.isDone(), "the consumer waits for the queue");
            producer.put(bytes("early"));
            assertArrayEquals(bytes("early"), early.get(30, TimeUnit.SECONDS));
        } finally {
            pool.shutdownNow();
        }

        assertThrows(IllegalArgumentException.class, () -> WorkQueue.open(service, "relative"));
        assertThrows(IllegalArgumentException.class, () -> WorkQueue.open(service, "/a//b"));
        assertThrows(NullPointerException.class, () -> WorkQueue.open(service, null));
        assertThrows(NullPointerException.class, () -> WorkQueue.open(null, "/q"));
        assertThrows(IllegalArgumentException.class, () -> new WorkQueueOptions().maxItems(0));
        assertThrows(IllegalArgumentException.class, () -> new WorkQueueOptions().maxItems(25_001));
        assertThrows(IllegalArgumentException.class, () -> new WorkQueueOptions().maxItemBytes(-1));
        assertThrows(IllegalArgumentException.class, () -> new WorkQueueOptions().maxItemBytes(1_000_001));
        assertThrows(IllegalArgumentException.class, () -> new WorkQueueOptions().operationTimeout(Duration.ZERO));
        try (IDGeneratorService mem = IDGeneratorService.open("mem:")) {
            IllegalArgumentException noSession =
                    assertThrows(IllegalArgumentException.class, () -> WorkQueue.open(mem, "/q"));
            assertTrue(noSession.getMessage().contains("ZooKeeper"), noSession.getMessage());
        }

        // Close: idempotent, later calls refused, claims made before stay usable.
        WorkQueue queue = WorkQueue.open(service, path);
        WorkQueue.Claim claim = queue.claim(10, TimeUnit.SECONDS);
        queue.close();
        queue.close();
        assertTrue(queue.isClosed());
        assertThrows(IllegalStateException.class, () -> queue.put(bytes("x")));
        assertThrows(IllegalStateException.class, () -> queue.claim(0, TimeUnit.SECONDS));
        claim.complete();

        IDGeneratorService closed = IDGeneratorService.open(zk.connectString());
        closed.close();
        assertThrows(IllegalStateException.class, () -> WorkQueue.open(closed, "/q"));
    }

    /** Several threads on two queue handles claim concurrently while a producer puts: every item once. */
    @Test
    void threadsClaimEveryItemExactlyOnce() throws Exception {
        final int items = 300;
        final int consumers = 6;
        String path = freshQueue();
        Map<String, String> completedBy = new ConcurrentHashMap<>();
        List<String> duplicates = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger done = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(consumers + 1);
        long started = System.nanoTime();
        try (WorkQueue a = WorkQueue.open(service, path); WorkQueue b = WorkQueue.open(service, path)) {
            a.put(bytes("item -1")); // the queue exists before the consumers start
            Future<Set<String>> producer = pool.submit(() -> {
                Set<String> put = new HashSet<>();
                for (int i = 0; i < items; i++) {
                    put.add(b.put(bytes("item " + i)));
                }
                return put;
            });
            List<Future<Integer>> workers = new ArrayList<>();
            for (int w = 0; w < consumers; w++) {
                WorkQueue queue = w % 2 == 0 ? a : b;
                String name = "worker-" + w;
                workers.add(pool.submit(() -> {
                    int mine = 0;
                    while (done.get() < items + 1) {
                        try (WorkQueue.Claim claim = queue.claim(200, TimeUnit.MILLISECONDS)) {
                            if (claim == null) {
                                continue;
                            }
                            // Every third claim is released first, to be handed out again.
                            if (claim.getSequence() % 3 == 0 && !completedBy.containsKey("released " + claim.getItem())) {
                                completedBy.put("released " + claim.getItem(), name);
                                claim.release();
                                continue;
                            }
                            claim.complete();
                            if (completedBy.putIfAbsent(claim.getItem(), name) != null) {
                                duplicates.add(claim.getItem());
                            }
                            done.incrementAndGet();
                            mine++;
                        }
                    }
                    return mine;
                }));
            }
            Set<String> put = producer.get(120, TimeUnit.SECONDS);
            int total = 0;
            Map<String, Integer> perWorker = new HashMap<>();
            for (int w = 0; w < consumers; w++) {
                int mine = workers.get(w).get(120, TimeUnit.SECONDS);
                perWorker.put("worker-" + w, mine);
                total += mine;
            }
            assertEquals(Collections.emptyList(), duplicates, "completed twice");
            assertEquals(items + 1, total);
            Set<String> completed = new HashSet<>();
            for (String key : completedBy.keySet()) {
                if (!key.startsWith("released ")) {
                    completed.add(key);
                }
            }
            assertEquals(items + 1, completed.size());
            assertTrue(completed.containsAll(put), "every item put was completed");
            long released = completedBy.keySet().stream().filter(k -> k.startsWith("released ")).count();
            assertTrue(released > 0, "some claims were released and handed out again");
            assertNull(a.claim(0, TimeUnit.SECONDS));
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            System.out.println("WorkQueue threads: " + (items + 1) + " items, " + consumers + " consumers, "
                    + released + " released and redelivered, " + millis + " ms; per worker " + perWorker);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A consumer cut off from ZooKeeper past its session timeout loses its claim: the item goes to
     * another consumer, and the cut-off consumer's complete throws SessionLostException.
     */
    @Test
    void aClaimLostWithItsSessionIsRedeliveredAndCannotComplete() throws Exception {
        String path = freshQueue();
        IDGeneratorOptions quick = new IDGeneratorOptions().sessionTimeout(Duration.ofMillis(1500));
        try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(zk.connectString());
                IDGeneratorService cutOff = IDGeneratorService.open(proxy.connectString(), quick);
                WorkQueue theirs = WorkQueue.open(cutOff, path);
                WorkQueue ours = WorkQueue.open(service, path)) {
            String item = ours.put(bytes("job"));
            WorkQueue.Claim lost = theirs.claim(10, TimeUnit.SECONDS);
            assertEquals(item, lost.getItem());
            assertNull(ours.claim(0, TimeUnit.SECONDS), "claimed: nobody else gets it");

            proxy.dropReplies(); // no reply reaches the cut-off consumer any more
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!lost.isLost() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(lost.isLost(), "the fault happened: the session was declared lost");
            proxy.heal(); // the old session is no longer kept alive and expires on the server

            try (WorkQueue.Claim redelivered = ours.claim(30, TimeUnit.SECONDS)) {
                assertNotNull(redelivered, "the lost claim's item was handed out again");
                assertEquals(item, redelivered.getItem());
                SessionLostException e = assertThrows(SessionLostException.class, lost::complete);
                assertEquals(ErrorCode.SESSION_LOST, e.getCode());
                assertTrue(lost.isFinished());
                redelivered.complete();
            }
            assertNull(ours.claim(0, TimeUnit.SECONDS));
        }
    }

    /** Claim data is a copy. */
    @Test
    void claimDataIsACopy() throws Exception {
        try (WorkQueue queue = WorkQueue.open(service, freshQueue())) {
            byte[] data = {1, 2, 3};
            queue.put(data);
            data[0] = 9;
            try (WorkQueue.Claim claim = queue.claim(10, TimeUnit.SECONDS)) {
                byte[] got = claim.getData();
                assertArrayEquals(new byte[] {1, 2, 3}, got);
                got[1] = 9;
                assertArrayEquals(new byte[] {1, 2, 3}, claim.getData());
                claim.complete();
            }
        }
    }

    /**
     * Closing the queue ends a claim waiting on another thread: the claim throws
     * {@link IllegalStateException} and the close returns, instead of waiting out the claim's
     * 60-second timeout behind it. An item put afterwards is claimed by the next handle, so the
     * stopped claim left no lock behind.
     */
    @Test
    void closeEndsAClaimWaitingOnAnotherThread() throws Exception {
        String path = freshQueue();
        WorkQueue queue = WorkQueue.open(service, path);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<WorkQueue.Claim> waiting = pool.submit(() -> queue.claim(60, TimeUnit.SECONDS));
            Thread.sleep(500);
            assertFalse(waiting.isDone(), "guard: the claim is waiting when the queue is closed");
            long start = System.nanoTime();
            queue.close();
            long closeMillis = (System.nanoTime() - start) / 1_000_000;
            java.util.concurrent.ExecutionException ended =
                    assertThrows(java.util.concurrent.ExecutionException.class, () -> waiting.get(10, TimeUnit.SECONDS));
            assertTrue(ended.getCause() instanceof IllegalStateException, "the waiting claim: " + ended.getCause());
            assertTrue(closeMillis < 10_000, "close waited " + closeMillis + " ms behind the claim");
            assertThrows(IllegalStateException.class, () -> queue.claim(0, TimeUnit.SECONDS));
        } finally {
            pool.shutdownNow();
        }
        try (WorkQueue again = WorkQueue.open(service, path)) {
            String name = again.put(bytes("after the close"));
            try (WorkQueue.Claim claim = again.claim(10, TimeUnit.SECONDS)) {
                assertNotNull(claim, "the item put after the close is claimable");
                assertEquals(name, claim.getItem());
                claim.complete();
            }
        }
    }
}
