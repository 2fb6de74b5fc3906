package io.zooid;

/** What {@link IDGeneratorService#migrateCategory(IDCategory, Layout, long)} did. */
public final class Migration {
    private final boolean moved;
    private final int fromFormat;
    private final int toFormat;
    private final long base;

    /** From the native layout: moved (0/1), format before, format after, base. */
    Migration(long[] values) {
        if (values.length != 4) {
            throw new IllegalStateException("malformed migration result from the native library");
        }
        this.moved = values[0] != 0;
        this.fromFormat = (int) values[1];
        this.toFormat = (int) values[2];
        this.base = values[3];
    }

    /** True when the pool moved; false when it was in the layout asked for already. */
    public boolean isMoved() {
        return moved;
    }

    /** The pool format before (1 for a seed-style node). */
    public int getFromFormat() {
        return fromFormat;
    }

    /** The pool format now (4; the same as before when nothing moved). */
    public int getToFormat() {
        return toFormat;
    }

    /**
     * When moved, the first ID of the fresh-block region (one past the last ID when none is
     * left); 0 when nothing moved.
     */
    public long getBase() {
        return base;
    }

    @Override
    public String toString() {
        return moved
                ? "moved from format " + fromFormat + " to " + toFormat + ", fresh blocks from " + base
                : "already in format " + toFormat;
    }
}
