package io.zooid;

import java.time.Duration;
import java.util.Objects;

/**
 * How an {@link IDSource} sizes and times its batches. Defaults: a first batch of 1,000 IDs,
 * refills of 100 to 1,000,000 IDs sized (doubled or halved) so that a batch lasts about 30 s at
 * the observed rate, the next batch requested once 10% of the current one is used, and runs of
 * up to 1,024 IDs moved to Java per native call. The source copies the options when it opens.
 * Not thread-safe.
 *
 * <p>The native library reads the batch fields below by name ({@code src/jni/options.rs}).
 */
public final class IDSourceOptions {
    private long initialBatch = 1_000;
    private long minBatch = 100;
    private long maxBatch = 1_000_000;
    private double refillWhenUsed = 0.1;
    private long targetBatchMillis = 30_000;
    private int chunk = 1_024;

    /** Options with every default. */
    public IDSourceOptions() {}

    /**
     * The first batch and the bounds of every refill.
     *
     * @throws IllegalArgumentException unless {@code 1 <= min <= initial <= max <= 2^31 - 1}
     */
    public IDSourceOptions batch(long initial, long min, long max) {
        if (min < 1 || min > initial || initial > max || max > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("batch sizes need 1 <= min (" + min + ") <= initial ("
                    + initial + ") <= max (" + max + ") <= " + Integer.MAX_VALUE);
        }
        this.initialBatch = initial;
        this.minBatch = min;
        this.maxBatch = max;
        return this;
    }

    /**
     * The fraction of the current batch used at which the next one is requested.
     *
     * @throws IllegalArgumentException unless {@code 0 < fraction <= 1}
     */
    public IDSourceOptions refillWhenUsed(double fraction) {
        if (!(fraction > 0.0 && fraction <= 1.0)) {
            throw new IllegalArgumentException("refillWhenUsed must be in (0, 1], got " + fraction);
        }
        this.refillWhenUsed = fraction;
        return this;
    }

    /** How long a batch should last at the observed consumption rate (at least 1 ms). */
    public IDSourceOptions targetBatchDuration(Duration duration) {
        Objects.requireNonNull(duration, "duration");
        long millis = duration.toMillis();
        if (millis < 1) {
            throw new IllegalArgumentException("targetBatchDuration must be at least 1 ms");
        }
        this.targetBatchMillis = millis;
        return this;
    }

    /**
     * The most IDs moved from the native source to Java per native call (at least 1). Larger
     * chunks make fewer native calls; IDs of a chunk not used are pushed back by close.
     */
    public IDSourceOptions chunk(int ids) {
        if (ids < 1) {
            throw new IllegalArgumentException("chunk must be at least 1, got " + ids);
        }
        this.chunk = ids;
        return this;
    }

    int chunk() {
        return chunk;
    }
}
