package io.zooid;

import java.util.ArrayList;
import java.util.List;

/**
 * Child-JVM entry point for {@link PushUnderFullHeapTest}: a push that the native side refuses
 * with nothing written ({@link PoolFullException}, the pool at its size limit) while the heap has
 * no room left for the exception that says so, so that the JVM throws an
 * {@link OutOfMemoryError} instead.
 *
 * <p>Fills the heap down to 16-byte objects, frees a little slack (enough for the set's own
 * arrays, not for the exception) and pushes; tries again with less slack until the push no
 * longer ends in its {@code PoolFullException} (each attempt writes nothing). Exits 0 only when
 * the set still holds its IDs afterwards and they are pushed fine once the heap is free; 1 when
 * they vanished (the set emptied, nothing freed and nothing reported); 3 when no attempt
 * provoked it.
 */
public final class PushUnderFullHeapWorkload {
    private static final int CHUNK = 64 * 1024;

    private PushUnderFullHeapWorkload() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        IDCategory cat = new IDCategory("/zooid-java-test/full-heap/c" + System.nanoTime());
        try (IDGeneratorService service = IDGeneratorService.open(connect)) {
            service.createCategory(cat, CategorySpec.of(1, 1000).layout(Layout.SINGLE_NODE, 0));
            IDSet ids = service.takeIDs(cat, 10);
            long size = service.getPoolInfo(cat).getSizeBytes();
            long leakedBefore = service.getStats().getIDsLeaked();
            try (IDGeneratorService capped =
                    IDGeneratorService.open(connect, new IDGeneratorOptions().maxPoolBytes(size))) {
                // Once with room: the classes and call sites of the push are linked before the
                // heap is full (linking them then fails with an InternalError of its own).
                try {
                    capped.pushIDs(ids);
                    System.out.println("UNEXPECTED: the capped push applied");
                    System.exit(2);
                } catch (PoolFullException expected) {
                    System.out.println("with room: " + expected);
                }
                // Less and less room, until the push no longer ends in its PoolFullException:
                // an OutOfMemoryError while it was built, or (the native side unable to throw
                // at all) a normal return, or the IDGeneratorException that says so.
                boolean provoked = false;
                for (int slack = 64; slack >= 1 && !provoked; slack /= 2) {
                    Throwable thrown = pushWithSlack(capped, ids, slack);
                    System.out.println("slack " + slack + " objects: " + thrown);
                    provoked = !(thrown instanceof PoolFullException);
                    if (provoked) {
                        System.out.println("provoked: the push ended in " + thrown);
                    }
                }
                if (!provoked) {
                    System.out.println("NOT PROVOKED: every push built its exception");
                    System.exit(3);
                }
            }
            System.gc();
            long leaked = service.getStats().getIDsLeaked() - leakedBefore;
            long free = service.getPoolInfo(cat).countFreeIDs();
            System.out.println("after the push: the set holds " + ids.countIDs() + ", free " + free
                    + ", leaked " + leaked);
            if (ids.countIDs() != 10) {
                System.out.println("PUSH LOST: a push that wrote nothing emptied the set");
                System.exit(1);
            }
            service.pushIDs(ids);
            System.out.println("FULL HEAP OK: kept, then pushed; free " + service.getPoolInfo(cat).countFreeIDs());
            System.exit(service.getPoolInfo(cat).countFreeIDs() == 1000 ? 0 : 1);
        }
    }

    /** Pushes {@code ids} through {@code capped} with the heap full but for {@code slack} small objects. */
    private static Throwable pushWithSlack(IDGeneratorService capped, IDSet ids, int slack) {
        List<Object> filler = new ArrayList<>(1 << 16);
        Throwable thrown = null;
        try {
            FullHeap.fill(filler, CHUNK);
            FullHeap.fill(filler, 1024);
            FullHeap.fill(filler, 0);
            // Free the last small objects: the room the push has.
            for (int i = 0; i < slack && !filler.isEmpty(); i++) {
                filler.set(filler.size() - 1 - i, null);
            }
            try {
                capped.pushIDs(ids);
            } catch (Throwable t) {
                thrown = t;
            }
        } finally {
            filler.clear();
        }
        return thrown;
    }
}
