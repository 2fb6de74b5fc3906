package io.zooid;

/**
 * The native methods, implemented in Rust ({@code src/jni/} of the zooid crate) and bound with
 * {@code RegisterNatives} when the library loads. The class name is fixed in the native library:
 * do not relocate the {@code io.zooid} package when shading.
 *
 * <p>Handles are pointers to native objects; the {@link NativeResource} that owns each one
 * guarantees that it is used only while live and freed exactly once. Options cross as the Java
 * options objects (the native side reads their fields by name), ranges as {@code long[]}
 * start/end pairs.
 */
final class ZooidNative {
    static {
        NativeLoader.load();
    }

    private ZooidNative() {}

    /** Forces the library to load (and fail here, with its reason, if it cannot). */
    static void ensureLoaded() {
        // Running the static initializer is the whole point.
    }

    /** Opens a service; the options' unset fields (0, null) mean the default. */
    static native long open(String connect, IDGeneratorOptions options) throws IDGeneratorException;

    static native void close(long handle);

    /**
     * The fields of a {@link CategorySpec}: {@code layout} a {@link Layout} number, 0 for the
     * store's default; {@code unit} 0 for 1000; {@code ceiling} -1 for none; {@code acl} null for
     * none.
     */
    static native void createCategory(long handle, String category, long first, long last, int layout,
            long unit, long ceiling, String acl) throws IDGeneratorException;

    /** moved (0/1), format before, format after, base; {@code layout} as for createCategory. */
    static native long[] migrateCategory(long handle, String category, int layout, long unit)
            throws IDGeneratorException;

    static native long[] takeIds(long handle, String category, int count) throws IDGeneratorException;

    /**
     * Pushes {@code ranges}; when the push fails with nothing written, sets {@code kept[0]} to 1
     * before it throws (the only word Java may keep its IDs on).
     */
    static native void pushIds(long handle, String category, String origin, long[] ranges, long[] kept)
            throws IDGeneratorException;

    /**
     * The store the service's IDs come from, or null when it cannot say: each {@link IDSet} a take
     * makes keeps it, and its push passes it back (a push through a service on another store is
     * refused).
     */
    static native String origin(long handle) throws IDGeneratorException;

    /** bounds start, bounds end, version, bytes, legacy (0/1), free count, free pairs... */
    static native long[] poolInfo(long handle, String category) throws IDGeneratorException;

    /** Opens a CAS counter on the session of service {@code service}. */
    static native long counterOpen(long service, String path) throws IDGeneratorException;

    static native void counterClose(long counter);

    static native void counterInit(long counter, long value) throws IDGeneratorException;

    /** The reserved range: first, last. */
    static native long[] counterNext(long counter, long n) throws IDGeneratorException;

    static native long counterGet(long counter) throws IDGeneratorException;

    /**
     * Opens a work queue on the session of service {@code service}; the options' unset fields
     * (0, a negative {@code maxItemBytes}, a null identity) mean the default.
     */
    static native long queueOpen(long service, String path, WorkQueueOptions options) throws IDGeneratorException;

    static native void queueClose(long queue);

    /** Ends the claims waiting on queue {@code queue} with {@link IllegalStateException}, and later ones. */
    static native void queueStopClaims(long queue);

    /** Returns the item's name. */
    static native String queuePut(long queue, byte[] data) throws IDGeneratorException;

    /** Returns a claim handle, or 0 when no item came within {@code timeoutMillis} (negative: for ever). */
    static native long queueClaim(long queue, long timeoutMillis) throws IDGeneratorException;

    static native String claimItem(long claim) throws IDGeneratorException;

    static native byte[] claimData(long claim) throws IDGeneratorException;

    static native long claimSequence(long claim) throws IDGeneratorException;

    static native boolean claimIsLost(long claim);

    /** Completes and frees the claim. */
    static native void claimComplete(long claim) throws IDGeneratorException;

    /** Releases and frees the claim. */
    static native void claimRelease(long claim) throws IDGeneratorException;

    /** Frees the claim; one neither completed nor released is released in the background. */
    static native void claimFree(long claim);

    /**
     * Joins an election on the service's session; returns the candidacy handle, which {@link
     * LeaderElection} uses only while open and frees exactly once with {@link #electionFree}.
     */
    static native long electionJoin(long serviceHandle, String group, String name, byte[] data, int stopOnPause)
            throws IDGeneratorException;

    /** state (0 inactive, 1 active, 2 paused), token (0 when none), closed (0/1), terms, notifications, generation. */
    static native long[] electionStatus(long handle);

    /** The new status as {@link #electionStatus}, or null when nothing changed in time. */
    static native long[] electionWaitChange(long handle, int lastState, long lastToken, int lastClosed, long timeoutMillis)
            throws IDGeneratorException;

    /** Milliseconds the leadership's lease still runs, 0 when none. */
    static native long electionLeaseRemainingMillis(long handle) throws IDGeneratorException;

    static native long electionAwaitLeadership(long handle, long timeoutMillis) throws IDGeneratorException;

    /** A fenced setData at an explicit version (>= 0); returns the new data version. */
    static native int electionSetData(long handle, String path, byte[] data, int version) throws IDGeneratorException;

    static native void electionCreate(long handle, String path, byte[] data) throws IDGeneratorException;

    /** A fenced delete at an explicit version (>= 0). */
    static native void electionDelete(long handle, String path, int version) throws IDGeneratorException;

    static native void electionResign(long handle) throws IDGeneratorException;

    static native void electionFree(long handle);

    /** Null when nobody leads, else token (8 bytes), name and node (4-byte length + UTF-8), data. */
    static native byte[] electionLeader(long serviceHandle, String group) throws IDGeneratorException;

    /** Opens a prefetching source on a service handle; returns the source handle. */
    static native long sourceOpen(long serviceHandle, String category, IDSourceOptions options)
            throws IDGeneratorException;

    /** Writes the next run of at most {@code max} IDs to {@code out[0]..out[1]}. */
    static native void sourceNextRun(long handle, long max, long[] out) throws IDGeneratorException;

    /** Closes a source, pushing back its IDs and {@code unused} (start/end pairs). */
    static native void sourceClose(long handle, long[] unused) throws IDGeneratorException;

    /** handed out, refills, refill failures, waits, last batch, held locally. */
    static native long[] sourceStats(long handle) throws IDGeneratorException;

    static native void sourceFree(long handle);

    /** Fills {@code into} (a fresh object) with the service's statistics. */
    static native void stats(long handle, ServiceStats into) throws IDGeneratorException;

    /** The version of the Rust crate the library was built from. */
    static native String version();

    /** Panics in Rust, to test that the panic becomes an exception (code PANIC). */
    static native void panicForTest() throws IDGeneratorException;

    /** Panics in Rust in a method declared without checked exceptions: an IllegalStateException. */
    static native void uncheckedPanicForTest();

    /**
     * Takes up to {@code count} IDs with the Rust {@code IdSet::take_id} over {@code ranges};
     * returns elapsed nanoseconds, IDs taken, and their wrapping sum.
     */
    static native long[] benchTakeIds(long[] ranges, long count);
}
