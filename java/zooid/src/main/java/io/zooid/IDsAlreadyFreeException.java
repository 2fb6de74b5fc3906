package io.zooid;

/**
 * Pushed IDs are already free in the pool: the same IDs were pushed twice. Nothing was changed
 * and the {@link IDSet} keeps its IDs.
 */
public class IDsAlreadyFreeException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    private final long[] range;

    /** @param range the offending range as a start/end pair */
    public IDsAlreadyFreeException(String message, String category, long[] range) {
        super(ErrorCode.ALREADY_FREE, message, category);
        this.range = range == null ? new long[0] : range.clone();
    }

    /** A pushed range that is already free, or null if unknown. */
    public IDRange getRange() {
        return IDRange.fromPair(getCategory(), range, 0);
    }
}
