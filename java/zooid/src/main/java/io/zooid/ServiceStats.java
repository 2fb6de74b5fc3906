package io.zooid;

import java.util.Arrays;

/**
 * What an {@link IDGeneratorService} did since it was opened: an immutable snapshot from
 * {@link IDGeneratorService#getStats()}. The same figures are exposed over JMX as
 * {@code io.zooid:type=IDGeneratorService,name=...} (see {@link IDGeneratorServiceMXBean}), and
 * docs/OPERATIONS.md explains each. Per-category figures: {@link IDGeneratorService#getPoolInfo}.
 */
public final class ServiceStats {
    /**
     * Upper bounds, in microseconds, of the latency buckets of {@link #getLatencyBuckets()}; a
     * last bucket counts the slower operations.
     */
    public static final long[] LATENCY_BUCKET_BOUNDS_MICROS = {
        250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
        1_000_000, 2_500_000, 5_000_000, 10_000_000
    };

    private static final int FIXED = 17;

    private final long[] values;

    /** Reads the native layout (see src/java/stats.rs). */
    ServiceStats(long[] values) {
        if (values.length != FIXED + LATENCY_BUCKET_BOUNDS_MICROS.length + 1) {
            throw new IllegalStateException("native stats layout of " + values.length + " values");
        }
        this.values = values.clone();
    }

    /** Takes that returned IDs. */
    public long getTakes() { return values[0]; }

    /** Pushes that returned IDs to their pool. */
    public long getPushes() { return values[1]; }

    /** IDs handed out by those takes. */
    public long getIDsTaken() { return values[2]; }

    /** IDs returned by those pushes. */
    public long getIDsPushed() { return values[3]; }

    /** Operations that failed, whatever the reason. */
    public long getFailedOperations() { return values[4]; }

    /** Writes refused because another client changed the pool first. */
    public long getVersionConflicts() { return values[5]; }

    /** Attempts beyond each operation's first. */
    public long getRetries() { return values[6]; }

    /** Writes whose reply was lost. */
    public long getLostReplies() { return values[7]; }

    /** Lost replies whose write was found applied. */
    public long getLostRepliesApplied() { return values[8]; }

    /** Lost replies whose write was found not applied (the operation went on). */
    public long getLostRepliesNotApplied() { return values[9]; }

    /** Lost replies whose outcome stayed unknown ({@link OutcomeUnknownException}). */
    public long getLostRepliesUnknown() { return values[10]; }

    /** IDs leaked by the unknown outcomes. */
    public long getIDsLeaked() { return values[11]; }

    /** ZooKeeper sessions lost and replaced (0 on the embedded stores). */
    public long getSessionLosses() { return values[12]; }

    /** The current ZooKeeper session's generation, 1 for the first (0 on the embedded stores). */
    public long getSessionGeneration() { return values[13]; }

    /** Takes and pushes timed. */
    public long getLatencyCount() { return values[14]; }

    /** Their total duration in microseconds. */
    public long getLatencySumMicros() { return values[15]; }

    /** The slowest one, in microseconds. */
    public long getLatencyMaxMicros() { return values[16]; }

    /** Operations per latency bucket (see {@link #LATENCY_BUCKET_BOUNDS_MICROS}), not cumulative. */
    public long[] getLatencyBuckets() {
        return Arrays.copyOfRange(values, FIXED, values.length);
    }

    @Override
    public String toString() {
        return "ServiceStats[takes=" + getTakes() + ", pushes=" + getPushes()
                + ", idsTaken=" + getIDsTaken() + ", idsPushed=" + getIDsPushed()
                + ", failed=" + getFailedOperations() + ", conflicts=" + getVersionConflicts()
                + ", retries=" + getRetries() + ", lostReplies=" + getLostReplies()
                + " (applied " + getLostRepliesApplied() + ", not applied "
                + getLostRepliesNotApplied() + ", unknown " + getLostRepliesUnknown() + ")"
                + ", idsLeaked=" + getIDsLeaked() + ", sessionLosses=" + getSessionLosses()
                + ", generation=" + getSessionGeneration() + ", latencyMaxMicros="
                + getLatencyMaxMicros() + "]";
    }
}
