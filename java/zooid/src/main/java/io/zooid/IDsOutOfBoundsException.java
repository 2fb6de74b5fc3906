package io.zooid;

/**
 * Pushed IDs lie outside the category's bounds, so they cannot have come from it; nothing was
 * changed and the {@link IDSet} keeps its IDs.
 */
public class IDsOutOfBoundsException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    private final long[] rangeAndBounds;

    /** @param rangeAndBounds the offending range then the category's bounds, as start/end pairs */
    public IDsOutOfBoundsException(String message, String category, long[] rangeAndBounds) {
        super(ErrorCode.OUT_OF_BOUNDS, message, category);
        this.rangeAndBounds = rangeAndBounds == null ? new long[0] : rangeAndBounds.clone();
    }

    /** The pushed range that lies outside the bounds, or null if unknown. */
    public IDRange getRange() {
        return IDRange.fromPair(getCategory(), rangeAndBounds, 0);
    }

    /** The category's bounds, or null if unknown. */
    public IDRange getBounds() {
        return IDRange.fromPair(getCategory(), rangeAndBounds, 1);
    }
}
