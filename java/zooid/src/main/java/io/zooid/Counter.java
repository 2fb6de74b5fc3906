package io.zooid;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

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
 * {@link #next} throws {@link OutcomeUnknownException} naming the skipped values: they are
 * never handed out.
 *
 * <p>Opened from a service ({@link IDGeneratorService#counter(String)}) on the service's
 * ZooKeeper session, which it keeps open until it is closed. Thread-safe; calls through one
 * counter are serialized. {@link #close()} is idempotent, waits for calls in progress, and any
 * later call throws {@link IllegalStateException}.
 */
public final class Counter implements AutoCloseable {
    static {
        ZooidNative.ensureLoaded();
    }

    private final long handle;
    private final String path;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

    private Counter(long handle, String path) {
        this.handle = handle;
        this.path = path;
    }

    /** Opens a counter on a live service handle (the caller holds the service's read lock). */
    static Counter open(long serviceHandle, String path) throws IDGeneratorException {
        return new Counter(nativeOpen(serviceHandle, path), path);
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
            nativeInit(h, value);
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
     *     ({@link OutcomeUnknownException#getLeakedIDs()}) are skipped, never handed out
     * @throws ContentionException if version conflicts outlasted the retry budget
     * @throws ConnectionLostException if ZooKeeper was unreachable; nothing was reserved
     */
    public IDRange next(int n) throws IDGeneratorException {
        if (n < 1) {
            throw new IllegalArgumentException("next(" + n + "): ask for at least 1");
        }
        long[] range = withHandle(h -> nativeNext(h, n));
        return new IDRange(new IDCategory(path), range[0], range[1]);
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
        return withHandle(Counter::nativeGet);
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed.get();
    }

    /** Releases the counter (and its hold on the service's session). Closing again does nothing. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        Lock exclusive = lock.writeLock();
        exclusive.lock();
        try {
            nativeClose(handle);
        } finally {
            exclusive.unlock();
        }
    }

    @Override
    public String toString() {
        return "Counter[" + path + (closed.get() ? ", closed]" : "]");
    }

    private interface HandleCall<T> {
        T call(long handle) throws IDGeneratorException;
    }

    private <T> T withHandle(HandleCall<T> call) throws IDGeneratorException {
        Lock shared = lock.readLock();
        shared.lock();
        try {
            if (closed.get()) {
                throw new IllegalStateException("Counter " + path + " is closed");
            }
            return call.call(handle);
        } finally {
            shared.unlock();
        }
    }

    private static native long nativeOpen(long service, String path) throws IDGeneratorException;

    private static native void nativeClose(long handle);

    private static native void nativeInit(long handle, long value) throws IDGeneratorException;

    private static native long[] nativeNext(long handle, long n) throws IDGeneratorException;

    private static native long nativeGet(long handle) throws IDGeneratorException;
}
