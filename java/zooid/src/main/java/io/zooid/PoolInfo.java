package io.zooid;

import java.util.List;

/** What a category's pool node holds, read afresh by {@link IDGeneratorService#getPoolInfo}. */
public final class PoolInfo {
    private final IDCategory category;
    private final long firstID;
    private final long lastID;
    private final int version;
    private final long sizeBytes;
    private final boolean legacy;
    private final long freeCount;
    private final long[] free;

    /** From the native layout: bounds, version, bytes, legacy, free count, free pairs. */
    PoolInfo(IDCategory category, long[] values) {
        if (values.length < 6 || values.length % 2 != 0) {
            throw new IllegalStateException("malformed pool info from the native library");
        }
        this.category = category;
        this.firstID = values[0];
        this.lastID = values[1];
        this.version = (int) values[2];
        this.sizeBytes = values[3];
        this.legacy = values[4] != 0;
        this.freeCount = values[5];
        this.free = java.util.Arrays.copyOfRange(values, 6, values.length);
    }

    /** The category. */
    public IDCategory getCategory() {
        return category;
    }

    /** The first ID of the category's bounds. */
    public long getFirstID() {
        return firstID;
    }

    /** The last ID of the category's bounds (inclusive). */
    public long getLastID() {
        return lastID;
    }

    /** The pool node's ZooKeeper data version. */
    public int getVersion() {
        return version;
    }

    /** The pool node's size in bytes. */
    public long getSizeBytes() {
        return sizeBytes;
    }

    /** Whether the node is a headerless, seed-style list of ranges. */
    public boolean isLegacy() {
        return legacy;
    }

    /** How many IDs are free. */
    public long countFreeIDs() {
        return freeCount;
    }

    /** The free IDs as ascending ranges (new objects on each call). */
    public List<IDRange> getFreeRanges() {
        return IDRange.fromPairs(category.getName(), free);
    }

    @Override
    public String toString() {
        StringBuilder out = new StringBuilder(category.getName())
                .append(" bounds ").append(firstID).append(':').append(lastID)
                .append(", version ").append(version)
                .append(", free ").append(freeCount).append(" [");
        for (int i = 0; i < free.length; i += 2) {
            if (i > 0) {
                out.append(' ');
            }
            out.append(free[i]).append(':').append(free[i + 1]);
        }
        return out.append(']').toString();
    }
}
