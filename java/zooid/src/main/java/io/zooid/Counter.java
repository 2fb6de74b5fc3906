package io.zooid;

/**
 * A CAS counter (the seed's ID counter): a ZooKeeper node holding the last value handed out as an
 * 8-byte big-endian {@code long} ({@code ByteBuffer.putLong}, the format existing deployments
 * have), advanced by versioned compare-and-set.
 *
 * <pre>{@code
 * try (IDGeneratorService service = IDGeneratorService.open("zk1:2181,zk2:2181");
 *      Counter agents = service.counter("/agents/next-id")) {
 *     IDRange ids = agents.next(10);   // ids.getStartID() .. ids.getEndID()
 * }
 * }</pre>
 *
 * <p>A value is handed out only when the write that reserved it is known to have applied. When a
 * write's reply is lost and its outcome cannot be told (the ZooKeeper session was lost too),
 * {@link #next} throws {@link OutcomeUnknownException} naming the skipped values: this call does
 * not hand them out (if the write in fact never applied, a later call may).
 *
 * <p>Each open counter keeps one small ephemeral marker under the node, deleted when it is
 * closed; its first {@code next} costs one more write (see docs/RECIPES.md): keep a counter open
 * for many calls rather than opening one per call.
 *
 * <p>Opened from a service ({@link IDGeneratorService#counter(String)}) on the service's
 * ZooKeeper session, which it keeps open until it is closed. Thread-safe; calls through one
 * counter are serialized. {@link #close()} is idempotent, waits for calls in progress, and any
 * later call throws {@link IllegalStateException}.
 */
public final class Counter extends NativeResource implements AutoCloseable {
    private final String path;
    /** What its values' {@link IDRange}s name: the path, as a category. */
    private final IDCategory values;

    /** A counter over a native counter handle (from {@link IDGeneratorService#counter(String)}). */
    Counter(long handle, IDCategory values) {
        super(handle);
        this.path = values.getName();
        this.values = values;
    }

    /** The counter's node path. */
    public String getPath() {
        return path;
    }

    /**
     * Creates the counter node (and missing parents) holding {@code value}, the last value handed
     * out: the first {@code next(1)} returns {@code value + 1}.
     *
     * @throws CategoryExistsException if the node exists already (it is left untouched)
     */
    public void init(long value) throws IDGeneratorException {
        withHandle(h -> {
            ZooidNative.counterInit(h, value);
            return null;
        });
    }

    /** {@code init(0)}. */
    public void init() throws IDGeneratorException {
        init(0);
    }

    /**
     * Reserves the {@code n} values after the counter's value and returns them as one range.
     *
     * @throws IllegalArgumentException if {@code n < 1}, or the range would pass
     *     {@link Long#MAX_VALUE}
     * @throws IDsExhaustedException if the counter is at {@link Long#MAX_VALUE}
     * @throws CategoryNotFoundException if the node does not exist
     * @throws CorruptPoolException if the node does not hold 8 bytes (it is never overwritten)
     * @throws OutcomeUnknownException if a lost reply could not be resolved; its values
     *     ({@link OutcomeUnknownException#getLeakedIDs()}) are skipped: not handed out by this
     *     call
     * @throws ContentionException if version conflicts outlasted the retry budget
     * @throws ConnectionLostException if ZooKeeper was unreachable; nothing was reserved
     */
    public IDRange next(int n) throws IDGeneratorException {
        if (n < 1) {
            throw new IllegalArgumentException("next(" + n + "): ask for at least 1");
        }
        long[] range = withHandle(h -> ZooidNative.counterNext(h, n));
        return new IDRange(values, range[0], range[1]);
    }

    /** {@code next(1).getStartID()}: one value. */
    public long next() throws IDGeneratorException {
        return next(1).getStartID();
    }

    /**
     * Reads the counter's value (the last value handed out), at least as recent as any
     * {@code next} that returned before this call.
     *
     * @throws CategoryNotFoundException if the node does not exist
     * @throws CorruptPoolException if the node does not hold 8 bytes
     */
    public long get() throws IDGeneratorException {
        return withHandle(ZooidNative::counterGet);
    }

    /** Releases the counter (and its hold on the service's session). Closing again does nothing. */
    @Override
    public void close() {
        closeOnce();
    }

    @Override
    void free(long handle) {
        ZooidNative.counterClose(handle);
    }

    @Override
    String describe() {
        return "Counter " + path;
    }

    @Override
    public String toString() {
        return "Counter[" + path + (isClosed() ? ", closed]" : "]");
    }
}
