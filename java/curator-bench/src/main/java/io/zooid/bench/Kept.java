package io.zooid.bench;

import java.util.ArrayList;
import java.util.List;

/** The IDs one client kept, as ascending merged ranges, printed as {@code kept S:E ...}. */
final class Kept {
    private final List<long[]> ranges = new ArrayList<>();

    void add(long start, long end) {
        if (!ranges.isEmpty()) {
            long[] last = ranges.get(ranges.size() - 1);
            if (last[1] + 1 == start) {
                last[1] = end;
                return;
            }
        }
        ranges.add(new long[] {start, end});
    }

    @Override
    public String toString() {
        StringBuilder line = new StringBuilder("kept");
        for (long[] r : ranges) {
            line.append(' ').append(r[0]).append(':').append(r[1]);
        }
        return line.toString();
    }
}
