package io.zooid;

import java.time.Duration;
import java.util.Objects;

/**
 * How {@link WorkQueue#open(IDGeneratorService, String, WorkQueueOptions)} bounds a queue. Unset
 * options keep zooid's defaults: at most 10000 items, items of at most 65536 bytes, 30 s for a
 * put, complete or release to get through connection loss, {@code "<hostname>:<pid>"} as the
 * identity written into locks. The queue copies the options when it opens. Not thread-safe.
 *
 * <p>The native library reads the fields below by name ({@code src/jni/options.rs}).
 */
public final class WorkQueueOptions {
    /** The largest {@link #maxItems(int)}: a listing of the queue must fit ZooKeeper's jute.maxbuffer. */
    public static final int MAX_MAX_ITEMS = 25_000;
    /** The largest {@link #maxItemBytes(int)}. */
    public static final int MAX_MAX_ITEM_BYTES = 1_000_000;

    private int maxItems;
    private int maxItemBytes = -1;
    private long operationTimeoutMillis;
    private String identity;

    /** Options with every default. */
    public WorkQueueOptions() {}

    /** The most items the queue may hold (1 to {@link #MAX_MAX_ITEMS}); a put beyond it throws {@link QueueFullException}. */
    public WorkQueueOptions maxItems(int items) {
        if (items < 1 || items > MAX_MAX_ITEMS) {
            throw new IllegalArgumentException("maxItems must be 1.." + MAX_MAX_ITEMS + ", got " + items);
        }
        this.maxItems = items;
        return this;
    }

    /** The largest item in bytes (0 to {@link #MAX_MAX_ITEM_BYTES}); a bigger put throws {@link TooLargeException}. */
    public WorkQueueOptions maxItemBytes(int bytes) {
        if (bytes < 0 || bytes > MAX_MAX_ITEM_BYTES) {
            throw new IllegalArgumentException("maxItemBytes must be 0.." + MAX_MAX_ITEM_BYTES + ", got " + bytes);
        }
        this.maxItemBytes = bytes;
        return this;
    }

    /**
     * How long a put, complete or release may retry through connection loss (at least 1 ms); past
     * it the call throws {@link OperationTimeoutException} and its outcome is unknown.
     */
    public WorkQueueOptions operationTimeout(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("operationTimeout must be positive, got " + timeout);
        }
        long millis;
        try {
            millis = Math.max(1, timeout.toMillis());
        } catch (ArithmeticException e) {
            millis = Long.MAX_VALUE;
        }
        this.operationTimeoutMillis = millis;
        return this;
    }

    /** The identity written into this process's locks, shown by {@code zooid queue show} (at most 256 bytes). */
    public WorkQueueOptions identity(String identity) {
        this.identity = Objects.requireNonNull(identity, "identity");
        return this;
    }
}
