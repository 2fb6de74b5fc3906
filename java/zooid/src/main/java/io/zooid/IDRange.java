package io.zooid;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * An inclusive range of IDs, {@code startID..endID}, that can be used up one ID at a time.
 *
 * <p>{@link #getStartID()} and {@link #getEndID()} are the bounds the range was created with;
 * {@link #takeID()}, {@link #hasMoreIDs()} and {@link #countIDs()} follow what is left of it. Not
 * thread-safe: use a range from one thread at a time.
 */
public final class IDRange {
    private final IDCategory category;
    private final long startID;
    private final long endID;
    /** The next ID to hand out, while {@code !usedUp}. */
    private long next;
    private boolean usedUp;

    /**
     * The IDs {@code startID..endID} (inclusive) of {@code category}.
     *
     * @throws NullPointerException if {@code category} is null
     * @throws IllegalArgumentException if {@code startID > endID}
     */
    public IDRange(IDCategory category, long startID, long endID) {
        this.category = Objects.requireNonNull(category, "category");
        if (startID > endID) {
            throw new IllegalArgumentException(
                    "range " + startID + ":" + endID + " ends before it starts");
        }
        this.startID = startID;
        this.endID = endID;
        this.next = startID;
    }

    /** The category the IDs belong to. */
    public IDCategory getCategory() {
        return category;
    }

    /** The first ID of the range as created. */
    public long getStartID() {
        return startID;
    }

    /** The last ID of the range as created (inclusive). */
    public long getEndID() {
        return endID;
    }

    /** Whether unused IDs remain. */
    public boolean hasMoreIDs() {
        return !usedUp;
    }

    /**
     * The next unused ID.
     *
     * @throws NoSuchElementException if the range is used up
     */
    public long takeID() {
        if (usedUp) {
            throw new NoSuchElementException("IDRange " + this + " is used up");
        }
        long id = next;
        if (id == endID) {
            usedUp = true;
        } else {
            next = id + 1;
        }
        return id;
    }

    /** How many unused IDs remain (at most {@link Long#MAX_VALUE}). */
    public long countIDs() {
        return usedUp ? 0 : count(next, endID);
    }

    /** The number of IDs in {@code start..end}, saturated at {@link Long#MAX_VALUE}. */
    static long count(long start, long end) {
        long n = end - start + 1;
        // Overflow only when the span exceeds Long.MAX_VALUE IDs: then n is <= 0.
        return n > 0 ? n : Long.MAX_VALUE;
    }

    /** {@code start:end} as created, the pool node's notation. */
    @Override
    public String toString() {
        return startID + ":" + endID;
    }

    /** The {@code index}-th start/end pair of {@code pairs} as a range, or null. */
    static IDRange fromPair(String category, long[] pairs, int index) {
        int at = index * 2;
        if (category == null || pairs == null || at + 1 >= pairs.length) {
            return null;
        }
        return new IDRange(new IDCategory(category), pairs[at], pairs[at + 1]);
    }

    /** Every start/end pair of {@code pairs} as a range. */
    static List<IDRange> fromPairs(String category, long[] pairs) {
        if (category == null || pairs == null) {
            return Collections.emptyList();
        }
        IDCategory cat = new IDCategory(category);
        List<IDRange> list = new ArrayList<>(pairs.length / 2);
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            list.add(new IDRange(cat, pairs[i], pairs[i + 1]));
        }
        return Collections.unmodifiableList(list);
    }
}
