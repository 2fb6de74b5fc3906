package io.zooid;

import java.util.ArrayList;
import java.util.List;

/**
 * Child-JVM entry point for {@link UndeliveredTakeTest}: a take whose IDs the native side cannot
 * hand to Java, because the JVM has no room left for the {@code long[]} of their ranges.
 *
 * <p>The category's free list is cut into {@code RANGES} single IDs, so that a take of that many
 * IDs needs a {@code long[]} of {@code 2 * RANGES} values (320 KB); the heap is then filled until
 * allocation fails and only {@code SLACK} bytes are freed again, enough for an exception but not
 * for the array. Prints the take's outcome and the pool's free count before and after; exits 0
 * only when the IDs of the failed take are free again (or reported leaked) and the exception
 * names what happened.
 */
public final class UndeliveredTakeWorkload {
    static final int RANGES = 20_000;
    private static final int CHUNK = 64 * 1024;
    private static final int SLACK_CHUNKS = 2;

    private UndeliveredTakeWorkload() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        IDCategory cat = new IDCategory("/zooid-java-test/undelivered/c" + System.nanoTime());
        try (IDGeneratorService service = IDGeneratorService.open(connect)) {
            // The single node holds the cut-up free list in one node, pushed in one write.
            service.createCategory(cat, CategorySpec.of(1, 1_000_000L).layout(Layout.SINGLE_NODE, 0));
            IDSet held = service.takeIDs(cat, 2 * RANGES);
            long[] odd = new long[2 * RANGES];
            for (int i = 0; i < RANGES; i++) {
                odd[2 * i] = 2L * i + 1;
                odd[2 * i + 1] = 2L * i + 1;
            }
            service.pushIDs(new IDSet(cat, odd));
            long freeBefore = service.getPoolInfo(cat).countFreeIDs();
            long leakedBefore = service.getStats().getIDsLeaked();
            System.out.println("free before " + freeBefore + ", held " + held.countIDs());

            Throwable failure = null;
            IDSet taken = null;
            List<byte[]> filler = new ArrayList<>();
            try {
                // The heap full, then its gaps smaller than a chunk too.
                FullHeap.fill(filler, CHUNK);
                FullHeap.fill(filler, 1024);
                int freed = 0;
                for (int i = 0; i < filler.size() && freed < SLACK_CHUNKS; i++) {
                    if (filler.get(i).length == CHUNK) {
                        filler.set(i, null);
                        freed++;
                    }
                }
                try {
                    taken = service.takeIDs(cat, RANGES);
                } catch (Throwable t) {
                    failure = t;
                }
            } finally {
                filler = null;
            }
            System.gc();
            if (taken != null) {
                System.out.println("NOT PROVOKED: the take succeeded with " + taken.countIDs() + " IDs");
                System.exit(3);
            }
            long freeAfter = service.getPoolInfo(cat).countFreeIDs();
            long leaked = service.getStats().getIDsLeaked() - leakedBefore;
            System.out.println("take failed with " + failure);
            System.out.println("free after " + freeAfter + " (before " + freeBefore + "), leaked " + leaked);
            boolean returned = freeAfter == freeBefore && leaked == 0;
            boolean reported = freeAfter == freeBefore - RANGES && leaked == RANGES;
            boolean named = failure instanceof IDGeneratorException
                    && String.valueOf(failure.getMessage()).contains(cat.getName())
                    && (returned ? failure.getMessage().contains("pushed back") : failure.getMessage().contains("leaked"));
            if ((returned || reported) && named) {
                System.out.println("UNDELIVERED OK: " + (returned ? "returned" : "reported leaked"));
                System.exit(0);
            }
            System.out.println("UNDELIVERED LOST: the IDs of the failed take are neither free nor reported leaked, or the exception does not say so");
            System.exit(1);
        }
    }
}
