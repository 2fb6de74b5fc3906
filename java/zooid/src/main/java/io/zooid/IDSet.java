package io.zooid;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * IDs handed out by one {@link IDGeneratorService#takeIDs take}: ascending ranges, used one ID at
 * a time with {@link #takeID()}.
 *
 * <p>Taking an ID is local to the JVM: no native call, no I/O, no allocation; one uncontended
 * compare-and-set guards it. Unused IDs go back to the pool with
 * {@link IDGeneratorService#pushIDs(IDSet)}, which empties and consumes the set: pushing it again
 * throws {@link IllegalStateException}. Threads may share a set: its methods are serialized, and a
 * push holds the set until it returns (a {@link #takeID()} meanwhile waits, then finds the set
 * empty), so no ID is both handed out and pushed back.
 */
public final class IDSet {
    /** {@link #state}: nobody uses the set. */
    private static final int FREE = 0;
    /** {@link #state}: a thread is in one of the set's short methods. */
    private static final int BUSY = 1;
    /** {@link #state}: a thread is pushing the set back (a network round trip). */
    private static final int PUSHING = 2;
    private static final AtomicIntegerFieldUpdater<IDSet> STATE =
            AtomicIntegerFieldUpdater.newUpdater(IDSet.class, "state");

    private final IDCategory category;
    /** The store a take got the IDs from, or null (not checked). */
    private final String origin;
    /** start/end pairs, ascending and disjoint. */
    private final long[] ranges;
    /** Index (in pairs * 2) of the range the next ID comes from. */
    private int pos;
    /** The next ID to hand out, inside the range at {@code pos} while {@code pos < ranges.length}. */
    private long next;
    /** A push applied (or its outcome is unknown): the set is consumed. */
    private boolean pushed;
    /**
     * Who holds the set: {@link #FREE}, {@link #BUSY} or {@link #PUSHING}. Taking it is a
     * compare-and-set, giving it back a release store; the fields above are only touched while
     * it is held.
     */
    private volatile int state;

    /**
     * Pushes a set's unused IDs, given as start/end pairs; when the push fails with nothing
     * written, sets {@code kept[0]} to 1 before it throws.
     */
    interface Pusher {
        void push(long[] ranges, long[] kept) throws IDGeneratorException;
    }

    /**
     * A set over {@code ranges}, start/end pairs that the native side has already checked to be
     * ascending and disjoint.
     */
    IDSet(IDCategory category, long[] ranges) {
        this(category, ranges, null);
    }

    /**
     * A set a take got from the store {@code origin} (null: not checked); a push through a service
     * on another store is refused.
     */
    IDSet(IDCategory category, long[] ranges, String origin) {
        this.origin = origin;
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

    /** The store the IDs were taken from, or null. */
    String origin() {
        return origin;
    }

    /**
     * The next unused ID.
     *
     * @throws NoSuchElementException if the set is used up
     */
    public long takeID() {
        if (!STATE.compareAndSet(this, FREE, BUSY)) {
            waitToHold(BUSY);
        }
        try {
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
        } finally {
            STATE.lazySet(this, FREE);
        }
    }

    /** Whether unused IDs remain. */
    public boolean hasMoreIDs() {
        hold(BUSY);
        try {
            return pos < ranges.length;
        } finally {
            STATE.lazySet(this, FREE);
        }
    }

    /** How many unused IDs remain (at most {@link Long#MAX_VALUE}). */
    public long countIDs() {
        hold(BUSY);
        try {
            long total = 0;
            for (int i = pos; i < ranges.length; i += 2) {
                long n = IDRange.count(i == pos ? next : ranges[i], ranges[i + 1]);
                total = n > Long.MAX_VALUE - total ? Long.MAX_VALUE : total + n;
            }
            return total;
        } finally {
            STATE.lazySet(this, FREE);
        }
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
        hold(BUSY);
        try {
            return rest();
        } finally {
            STATE.lazySet(this, FREE);
        }
    }

    /**
     * Pushes the unused IDs with {@code pusher}, holding the set meanwhile, and consumes the set
     * unless the pusher said nothing was written; pushes nothing when none remain (and consumes
     * the set too). A push that wrote nothing leaves the set as it was, to be pushed again,
     * whatever it threw (also an {@link OutOfMemoryError} while its exception was built); one
     * that wrote nothing yet returned (its exception could not be thrown) throws
     * {@link IDGeneratorException} {@link ErrorCode#OTHER}.
     *
     * @throws IllegalStateException if the set was already pushed back: its IDs are not pushed
     *     again, since others may hold them by now
     */
    void push(Pusher pusher) throws IDGeneratorException {
        hold(PUSHING);
        try {
            if (pushed) {
                throw new IllegalStateException("the IDSet of " + category
                        + " was already pushed back: a push consumes its set");
            }
            long[] rest = rest();
            if (rest.length > 0) {
                // Allocated before the push: the native side says "nothing written" in it
                // without allocating, so the answer survives a full heap.
                long[] kept = new long[1];
                try {
                    pusher.push(rest, kept);
                } catch (Throwable e) {
                    // Kept only when the native side said nothing was written. A push in doubt,
                    // one the native side panicked in, or one that ended before it could say
                    // (it may have been sent) is never sent again: a second one could free IDs
                    // taken meanwhile.
                    if (kept[0] != 1) {
                        consume();
                    }
                    throw e;
                }
                if (kept[0] == 1) {
                    throw new IDGeneratorException(ErrorCode.OTHER,
                            "the push of " + category + " wrote nothing and its error could not be"
                                    + " reported; the set keeps its IDs",
                            category.getName());
                }
            }
            consume();
        } finally {
            synchronized (this) {
                state = FREE;
                notifyAll();
            }
        }
    }

    /** The unused IDs as start/end pairs; the caller holds the set. */
    private long[] rest() {
        if (pos >= ranges.length) {
            return new long[0];
        }
        long[] rest = Arrays.copyOfRange(ranges, pos, ranges.length);
        rest[0] = next;
        return rest;
    }

    /** Marks every remaining ID as used and the set as pushed; the caller holds the set. */
    private void consume() {
        pos = ranges.length;
        next = 0;
        pushed = true;
    }

    /**
     * Takes the set {@code as} {@link #BUSY} or {@link #PUSHING}, waiting while another thread
     * holds it: a short method by spinning, a push (which may last a network round trip) on the
     * set's monitor, notified when the push ends.
     */
    private void hold(int as) {
        if (!STATE.compareAndSet(this, FREE, as)) {
            waitToHold(as);
        }
    }

    /** The slow path of {@link #hold}: another thread holds the set. */
    private void waitToHold(int as) {
        boolean interrupted = false;
        while (!STATE.compareAndSet(this, FREE, as)) {
            if (state == PUSHING) {
                synchronized (this) {
                    while (state == PUSHING) {
                        try {
                            wait();
                        } catch (InterruptedException e) {
                            interrupted = true;
                        }
                    }
                }
            } else {
                Thread.yield();
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
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
