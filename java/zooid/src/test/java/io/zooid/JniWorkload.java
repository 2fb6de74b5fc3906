package io.zooid;

/**
 * Child-JVM entry point for {@link CheckJniTest}: exercises every native method, every error
 * path that crosses the boundary, and long loops, so that {@code -Xcheck:jni} sees them all.
 * Prints {@code WORKLOAD OK} at the end.
 */
public final class JniWorkload {
    private JniWorkload() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        IDCategory cat = new IDCategory("/zooid-java-test/checkjni/did");
        IDGeneratorService service = IDGeneratorService.open(connect);
        service.createCategory(cat, CategorySpec.of(1, 1_000_000_000L));
        long sum = 0;
        for (int i = 0; i < 3000; i++) {
            IDSet ids = service.takeIDs(cat, 1 + i % 50);
            sum += ids.takeID();
            service.pushIDs(ids);
        }
        for (int i = 0; i < 300; i++) {
            expect(CategoryNotFoundException.class, () -> service.takeIDs(new IDCategory("/zooid-java-test/checkjni/none"), 1));
            expect(IDGeneratorException.class, ZooidNative::panicForTest);
            IDSet ids = service.takeIDs(cat, 5);
            IDSet copy = new IDSet(cat, ids.remainingRanges());
            service.pushIDs(ids);
            expect(IDsAlreadyFreeException.class, () -> service.pushIDs(copy));
            expect(IDsOutOfBoundsException.class, () -> service.pushIDs(new IDSet(cat, new long[] {2_000_000_000L, 2_000_000_001L})));
            expect(IllegalArgumentException.class, () -> IDGeneratorService.open(""));
            expect(IllegalArgumentException.class, () -> ZooidNative.takeIds(0, "relative", 1));
            expect(IllegalStateException.class, () -> ZooidNative.takeIds(0, "/x", 1));
            expect(NullPointerException.class, () -> ZooidNative.pushIds(0, null, null, null, new long[1]));
            expect(NullPointerException.class, () -> ZooidNative.pushIds(0, "/x", null, null, new long[1]));
            expect(NullPointerException.class, () -> ZooidNative.pushIds(0, "/x", null, new long[] {1, 1}, null));
            service.getPoolInfo(cat);
            ZooidNative.benchTakeIds(new long[] {1, 1000}, 1000);
        }
        // The work queue's natives and their error paths.
        try (WorkQueue queue = WorkQueue.open(service, "/zooid-java-test/checkjni/queue",
                new WorkQueueOptions().maxItems(5).maxItemBytes(64))) {
            WorkQueue missing = WorkQueue.open(service, "/zooid-java-test/checkjni/no-queue");
            for (int i = 0; i < 100; i++) {
                String name = queue.put(new byte[i % 64]);
                try (WorkQueue.Claim claim = queue.claim(10, java.util.concurrent.TimeUnit.SECONDS)) {
                    if (!claim.getItem().equals(name) || claim.getData().length != i % 64 || claim.isLost()) {
                        throw new AssertionError("claimed " + claim + " after putting " + name);
                    }
                    if (i % 2 == 0) {
                        claim.complete();
                    } else if (i % 4 == 1) {
                        claim.release();
                        queue.claim(10, java.util.concurrent.TimeUnit.SECONDS).complete();
                    } else {
                        claim.close();
                        queue.claim(10, java.util.concurrent.TimeUnit.SECONDS).complete();
                    }
                }
                expect(TooLargeException.class, () -> queue.put(new byte[65]));
                // A queue never put to: a claim finds nothing (workers may start before producers).
                if (missing.claim(0, java.util.concurrent.TimeUnit.SECONDS) != null) {
                    throw new AssertionError("a queue never put to has no item");
                }
                expect(IllegalArgumentException.class, () -> WorkQueue.open(service, "relative"));
                expect(NullPointerException.class, () -> ZooidNative.queuePut(0, null));
                expect(IllegalStateException.class, () -> ZooidNative.queuePut(0, new byte[1]));
                expect(IllegalStateException.class, () -> ZooidNative.claimComplete(0));
                if (queue.claim(0, java.util.concurrent.TimeUnit.SECONDS) != null) {
                    throw new AssertionError("the queue should be empty");
                }
            }
            for (int i = 0; i < 5; i++) {
                queue.put(new byte[1]);
            }
            expect(QueueFullException.class, () -> queue.put(new byte[1]));
            missing.close();
        }

        // The prefetching source: runs of 7 IDs per native call, refills in the background. No
        // ID twice across all the sources (a closed source pushes back only what it did not hand
        // out). On hole nodes a refill may get lower IDs than the batch before (holes are taken
        // first only when they cover the take), so the IDs need not ascend.
        java.util.Set<Long> handedOut = new java.util.HashSet<>();
        for (int i = 0; i < 20; i++) {
            IDSource source = service.openSource(cat, new IDSourceOptions().batch(100, 50, 400).chunk(7));
            for (int n = 0; n < 2_000; n++) {
                long id = source.next();
                if (!handedOut.add(id)) {
                    throw new AssertionError("ID " + id + " handed out twice (source " + i + ")");
                }
            }
            source.stats();
            source.close();
            expect(IllegalStateException.class, source::next);
        }
        expect(CategoryNotFoundException.class,
                () -> service.openSource(new IDCategory("/zooid-java-test/checkjni/none")));
        expect(NullPointerException.class, () -> ZooidNative.sourceNextRun(0, 1, null));
        expect(IllegalStateException.class, () -> ZooidNative.sourceNextRun(0, 1, new long[2]));
        expect(IllegalStateException.class, () -> ZooidNative.sourceStats(0));
        expect(CategoryExistsException.class, () -> service.createCategory(cat, CategorySpec.of(1, 2)));
        expect(IllegalArgumentException.class, () -> IDGeneratorService.open(""));
        try (IDGeneratorService mem = IDGeneratorService.open("mem:")) {
            mem.createCategory(cat, CategorySpec.of(1, 3));
            mem.takeIDs(cat, 3);
            expect(IDsExhaustedException.class, () -> mem.takeIDs(cat, 1));
        }
        if (ZooidNative.version().isEmpty()) {
            throw new AssertionError("empty native version");
        }
        election(service, connect);
        service.close();
        service.close();
        expect(IllegalStateException.class, () -> service.takeIDs(cat, 1));
        System.out.println(sum > 0 ? "WORKLOAD OK" : "WORKLOAD BROKEN");
    }

    /** Every election native: join, status, waits, fenced writes, leader, resign, free, errors. */
    private static void election(IDGeneratorService service, String connect) throws Exception {
        String group = "/zooid-java-test/checkjni/election";
        java.util.concurrent.atomic.AtomicInteger changes = new java.util.concurrent.atomic.AtomicInteger();
        try (IDGeneratorService other = IDGeneratorService.open(connect)) {
            LeaderElection a = LeaderElection.join(service, group, "a", new byte[] {1, 2}, PausePolicy.KEEP,
                    (state, token) -> changes.incrementAndGet());
            long token = a.awaitLeadership(20, java.util.concurrent.TimeUnit.SECONDS);
            LeaderElection b = LeaderElection.join(other, group, "b", null, PausePolicy.STOP, null);
            String resource = group + "-resource";
            a.create(resource, new byte[] {0});
            for (int i = 0; i < 200; i++) {
                a.setData(resource, new byte[] {(byte) i}, i);
                if (a.getState() != LeaderState.ACTIVE || a.getFencingToken() != token) {
                    throw new AssertionError("the leader changed");
                }
                LeaderInfo info = LeaderElection.leader(other, group).get();
                if (info.getFencingToken() != token || info.getData().length != 2) {
                    throw new AssertionError("wrong leader info " + info);
                }
                expect(NotLeaderException.class, () -> b.setData(resource, new byte[0], 0));
                expect(IllegalArgumentException.class, () -> a.setData(resource, new byte[0], -1));
                expect(NullPointerException.class, () -> ZooidNative.electionSetData(0, null, null, 0));
                expect(IllegalStateException.class, () -> ZooidNative.electionStatus(0));
            }
            expect(OperationTimeoutException.class, () -> b.awaitLeadership(50, java.util.concurrent.TimeUnit.MILLISECONDS));
            if (ZooidNative.electionWaitChange(a.handleForTest(), 1, token, 0, 10) != null) {
                throw new AssertionError("a wait with no change returned a status");
            }
            a.delete(resource, 200);
            a.close();
            if (b.awaitLeadership(20, java.util.concurrent.TimeUnit.SECONDS) <= token) {
                throw new AssertionError("the token did not grow");
            }
            b.resign();
            expect(IllegalStateException.class, () -> ZooidNative.electionWaitChange(b.handleForTest(), 0, 0, 1, 10));
            b.close();
            if (LeaderElection.leader(other, group).isPresent() || changes.get() < 2) {
                throw new AssertionError("leader left over or listener silent: " + changes.get());
            }
        }
    }

    interface Call {
        void run() throws Exception;
    }

    private static void expect(Class<? extends Throwable> type, Call call) {
        try {
            call.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                return;
            }
            throw new AssertionError("expected " + type.getName() + ", got " + t, t);
        }
        throw new AssertionError("expected " + type.getName() + ", nothing thrown");
    }
}
