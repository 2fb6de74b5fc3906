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
        service.createCategory(cat, 1, 1_000_000_000L);
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
            expect(NullPointerException.class, () -> ZooidNative.pushIds(0, null, null));
            expect(NullPointerException.class, () -> ZooidNative.pushIds(0, "/x", null));
            service.getPoolInfo(cat);
            ZooidNative.benchTakeIds(new long[] {1, 1000}, 1000);
        }
        // The prefetching source: runs of 7 IDs per native call, refills in the background.
        for (int i = 0; i < 20; i++) {
            IDSource source = service.openSource(cat, new IDSourceOptions().batch(100, 50, 400).chunk(7));
            long last = 0;
            for (int n = 0; n < 2_000; n++) {
                long id = source.next();
                if (id <= last) {
                    throw new AssertionError("IDs from one source must ascend: " + last + " then " + id);
                }
                last = id;
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
        expect(CategoryExistsException.class, () -> service.createCategory(cat, 1, 2));
        expect(IllegalArgumentException.class, () -> IDGeneratorService.open(""));
        try (IDGeneratorService mem = IDGeneratorService.open("mem:")) {
            mem.createCategory(cat, 1, 3);
            mem.takeIDs(cat, 3);
            expect(IDsExhaustedException.class, () -> mem.takeIDs(cat, 1));
        }
        if (ZooidNative.version().isEmpty()) {
            throw new AssertionError("empty native version");
        }
        service.close();
        service.close();
        expect(IllegalStateException.class, () -> service.takeIDs(cat, 1));
        System.out.println(sum > 0 ? "WORKLOAD OK" : "WORKLOAD BROKEN");
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
