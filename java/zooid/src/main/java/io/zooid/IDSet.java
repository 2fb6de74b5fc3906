package io.zooid;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * IDs handed out by one {@link IDGeneratorService#takeIDs take}: ascending ranges, used one ID at
 * a time with {@link #takeID()}.
 *
 * <p>Taking an ID is local to the JVM: no native call, no I/O, no lock. Unused IDs go back to the
 * pool with {@link IDGeneratorService#pushIDs(IDSet)}, which empties the set. Not thread-safe: use
 * a set from one thread at a time (the service itself is shared between threads).
 */
public final class IDSet {
    private final IDCategory category;
    /** start/end pairs, ascending and disjoint. */
    private final long[] ranges;
    /** Index (in pairs * 2) of the range the next ID comes from. */
    private int pos;
    /** The next ID to hand out, inside the range at {@code pos} while {@code pos < ranges.length}. */
    private long next;

    /**
     * A set over {@code ranges}, start/end pairs that the native side has already checked to be
     * ascending and disjoint.
     */
    IDSet(IDCategory category, long[] ranges) {
        this.category = Objects.requireNonNull(category, "category");
        this.ranges = Objects.requireNonNull(ranges, "ranges");
        if (ranges.length % 2 != 0) {
            throw new IllegalArgumentException("ranges must be start/end pairs");
        }
        for (int i = 0; i < ranges.length; i += 2) {
            if (ranges[i] > ranges[i + 1] || (i > 0 && ranges[i - 1] >= ranges[i])) {
                throw new IllegalArgumentException(
                        "ranges must be ascending and disjoint: " + Arrays.toString(ranges));
            }
        }
        this.next = ranges.length > 0 ? ranges[0] : 0;
    }

    /** The category the IDs belong to. */
    public IDCategory getCategory() {
        return category;
    }

    /**
     * The next unused ID.
     *
     * @throws NoSuchElementException if the set is used up
     */
    public long takeID() {
        int i = pos;
        long[] r = ranges;
        if (i >= r.length) {
            throw new NoSuchElementException("IDSet of " + category + " is used up");
        }
        long id = next;
        if (id == r[i + 1]) {
            i += 2;
            pos = i;
            next = i < r.length ? r[i] : 0;
        } else {
            next = id + 1;
        }
        return id;
    }

    /** Whether unused IDs remain. */
    public boolean hasMoreIDs() {
        return pos < ranges.length;
    }

    /** How many unused IDs remain (at most {@link Long#MAX_VALUE}). */
    public long countIDs() {
        long total = 0;
        for (int i = pos; i < ranges.length; i += 2) {
            long n = IDRange.count(i == pos ? next : ranges[i], ranges[i + 1]);
            total = n > Long.MAX_VALUE - total ? Long.MAX_VALUE : total + n;
        }
        return total;
    }

    /**
     * The unused IDs as ascending ranges, the first one trimmed to what is left of it. The ranges
     * are copies: taking IDs from them does not use up IDs of the set.
     */
    public Iterator<IDRange> getRanges() {
        long[] rest = remainingRanges();
        List<IDRange> list = new ArrayList<>(rest.length / 2);
        for (int i = 0; i < rest.length; i += 2) {
            list.add(new IDRange(category, rest[i], rest[i + 1]));
        }
        return java.util.Collections.unmodifiableList(list).iterator();
    }

    /** The unused IDs as start/end pairs. */
    long[] remainingRanges() {
        if (pos >= ranges.length) {
            return new long[0];
        }
        long[] rest = Arrays.copyOfRange(ranges, pos, ranges.length);
        rest[0] = next;
        return rest;
    }

    /** Marks every remaining ID as used (they were pushed back). */
    void clear() {
        pos = ranges.length;
        next = 0;
    }

    /** The category and the unused ranges, such as {@code /did [9001:10000 19001:20000]}. */
    @Override
    public String toString() {
        StringBuilder out = new StringBuilder(category.getName()).append(" [");
        long[] rest = remainingRanges();
        for (int i = 0; i < rest.length; i += 2) {
            if (i > 0) {
                out.append(' ');
            }
            out.append(rest[i]).append(':').append(rest[i + 1]);
        }
        return out.append(']').toString();
    }
}
