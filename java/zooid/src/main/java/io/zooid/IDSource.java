package io.zooid;

/**
 * A prefetching source of IDs of one category: {@link #next()} hands out IDs one at a time and
 * never waits on ZooKeeper while a prefetched batch is available.
 *
 * <p>The native side keeps two batches: the current one, and the next, which its own background
 * task takes from ZooKeeper once 10% of the current one is used (see {@link IDSourceOptions});
 * the batch size doubles or halves so that a batch lasts about a target time. Java moves runs of
 * consecutive IDs (up to {@link IDSourceOptions#chunk(int)}) from it with one native call per
 * run, written into a reused {@code long[2]}, and counts through each run in Java: no native
 * call per ID, no allocation per ID or per run. A native call blocks only when both batches are
 * used up.
 *
 * <p>A failed background refill is reported by the {@code next()} call that finds no ID left
 * ({@link IDsExhaustedException}, {@link ConnectionLostException}, {@link
 * OutcomeUnknownException} naming leaked IDs, ...), never earlier; the call after it tries again.
 *
 * <pre>{@code
 * try (IDSource ids = service.openSource(new IDCategory("/eventpublish/idgen/did"))) {
 *     while (moreEvents()) {
 *         publish(nextEvent(), ids.next());
 *     }
 * } // close() pushes back the unused IDs, the prefetched batch included
 * }</pre>
 *
 * <p>Thread-safe: threads may share a source ({@code next()} is a short synchronized section).
 * {@link #close()} pushes back every ID not handed out; a second close does nothing, and
 * {@code next()} after close throws {@link IllegalStateException}. The source keeps the service's
 * ZooKeeper session open until it is closed, even if the service is closed first. A source that
 * is never closed is never freed (there is no finalizer): its batches are not pushed back, so
 * those IDs are lost (never handed out) and the session stays open until the process ends.
 * Close it, as above.
 */
public final class IDSource extends NativeResource implements AutoCloseable {
    private final IDCategory category;
    private final int chunk;
    /** The next ID of the current run and how many of the run are left. Guarded by {@code this}. */
    private long nextId;
    private long left;
    /** Where the native call writes a run, reused. */
    private final long[] run = new long[2];
    /** Native calls made by {@link #next()}, for tests. Guarded by {@code this}. */
    private long nativeCalls;

    /** A source over a native source handle (from {@link IDGeneratorService#openSource}). */
    IDSource(long handle, IDCategory category, IDSourceOptions options) {
        super(handle);
        this.category = category;
        this.chunk = options.chunk();
    }

    /** The category the IDs come from. */
    public IDCategory getCategory() {
        return category;
    }

    /**
     * The next ID. From the current run when one is held (a few instructions); otherwise one
     * native call that returns the next run at once while the native source holds IDs, and
     * waits for a refill only when it holds none.
     *
     * @throws IllegalStateException if the source is closed
     * @throws IDsExhaustedException if the category has no free IDs left
     * @throws ConnectionLostException if a refill could not reach ZooKeeper
     * @throws OutcomeUnknownException if a refill's reply was lost; its IDs are leaked
     */
    public synchronized long next() throws IDGeneratorException {
        if (left > 0) {
            left--;
            return nextId++;
        }
        nativeCalls++;
        withHandle(h -> {
            ZooidNative.sourceNextRun(h, chunk, run);
            return null;
        });
        nextId = run[0];
        left = run[1] - run[0];
        return nextId++;
    }

    /**
     * What the source has done so far: {@code [IDs handed out, batches taken, failed refills,
     * calls that waited on ZooKeeper, last batch size, IDs held]}.
     *
     * @throws IllegalStateException if the source is closed
     */
    public synchronized long[] stats() throws IDGeneratorException {
        long[] stats = withHandle(ZooidNative::sourceStats);
        stats[0] -= left; // pulled into Java but not handed out yet
        stats[5] += left;
        return stats;
    }

    /** How many native calls {@link #next()} has made (one per run, none per ID). */
    synchronized long nativeCallsForTest() {
        return nativeCalls;
    }

    /**
     * Pushes back every ID not handed out: the rest of the current run, the rest of the native
     * batch and the prefetched batch (after waiting for a refill in flight), and frees the native
     * source. Closing again does nothing.
     *
     * <p>If the push fails, the IDs stay with the source, {@code next()} throws {@link
     * IllegalStateException}, and close may be called again. A close returns normally only when
     * every ID is back.
     *
     * @throws OutcomeUnknownException if the push, or an earlier refill's take, ended in doubt:
     *     the IDs concerned are leaked (never handed out), everything else is back, and the
     *     source is closed
     */
    @Override
    public synchronized void close() throws IDGeneratorException {
        if (isClosed()) {
            return;
        }
        long[] unused = left > 0 ? new long[] {nextId, nextId + left - 1} : new long[0];
        left = 0; // handed to the native source, which keeps them if the push fails
        try {
            withHandle(h -> {
                ZooidNative.sourceClose(h, unused);
                return null;
            });
        } catch (OutcomeUnknownException e) {
            closeOnce(); // nothing left to push: another close would only report it again
            throw e;
        }
        closeOnce();
    }

    @Override
    void free(long handle) {
        ZooidNative.sourceFree(handle);
    }

    @Override
    String describe() {
        return "IDSource of " + category;
    }

    @Override
    public String toString() {
        return "IDSource[" + category + (isClosed() ? ", closed]" : "]");
    }
}
