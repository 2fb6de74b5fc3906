package io.zooid;

import java.util.List;

/** Fills a child JVM's heap, for the workloads that need an allocation to fail for real. */
final class FullHeap {
    private FullHeap() {}

    /** Adds arrays of {@code size} bytes to {@code filler} until the heap has no room for one more. */
    static void fill(List<? super byte[]> filler, int size) {
        try {
            while (true) {
                filler.add(new byte[size]);
            }
        } catch (OutOfMemoryError full) {
            // Full for this size.
        }
    }
}
