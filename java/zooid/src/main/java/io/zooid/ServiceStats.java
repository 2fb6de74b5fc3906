package io.zooid;

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

    // Filled once by the native library (src/jni/stats.rs, by field name) before the object is
    // handed out, never changed after.
    private long takes;
    private long pushes;
    private long idsTaken;
    private long idsPushed;
    private long failedOperations;
    private long versionConflicts;
    private long retries;
    private long lostReplies;
    private long lostRepliesApplied;
    private long lostRepliesNotApplied;
    private long lostRepliesUnknown;
    private long idsLeaked;
    private long sessionLosses;
    private long sessionGeneration;
    private long latencyCount;
    private long latencySumMicros;
    private long latencyMaxMicros;
    private long[] latencyBuckets = new long[0];

    /** An empty snapshot for the native library to fill. */
    ServiceStats() {}

    /** Takes that returned IDs. */
    public long getTakes() { return takes; }

    /** Pushes that returned IDs to their pool. */
    public long getPushes() { return pushes; }

    /** IDs handed out by those takes. */
    public long getIDsTaken() { return idsTaken; }

    /** IDs returned by those pushes. */
    public long getIDsPushed() { return idsPushed; }

    /** Operations that failed, whatever the reason. */
    public long getFailedOperations() { return failedOperations; }

    /** Writes refused because another client changed the pool first. */
    public long getVersionConflicts() { return versionConflicts; }

    /** Attempts beyond each operation's first. */
    public long getRetries() { return retries; }

    /** Writes whose reply was lost. */
    public long getLostReplies() { return lostReplies; }

    /** Lost replies whose write was found applied. */
    public long getLostRepliesApplied() { return lostRepliesApplied; }

    /** Lost replies whose write was found not applied (the operation went on). */
    public long getLostRepliesNotApplied() { return lostRepliesNotApplied; }

    /** Lost replies whose outcome stayed unknown ({@link OutcomeUnknownException}). */
    public long getLostRepliesUnknown() { return lostRepliesUnknown; }

    /** IDs leaked by the unknown outcomes. */
    public long getIDsLeaked() { return idsLeaked; }

    /** ZooKeeper sessions lost and replaced (0 on the embedded stores). */
    public long getSessionLosses() { return sessionLosses; }

    /** The current ZooKeeper session's generation, 1 for the first (0 on the embedded stores). */
    public long getSessionGeneration() { return sessionGeneration; }

    /** Takes and pushes timed. */
    public long getLatencyCount() { return latencyCount; }

    /** Their total duration in microseconds. */
    public long getLatencySumMicros() { return latencySumMicros; }

    /** The slowest one, in microseconds. */
    public long getLatencyMaxMicros() { return latencyMaxMicros; }

    /** Operations per latency bucket (see {@link #LATENCY_BUCKET_BOUNDS_MICROS}), not cumulative. */
    public long[] getLatencyBuckets() {
        return latencyBuckets.clone();
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
