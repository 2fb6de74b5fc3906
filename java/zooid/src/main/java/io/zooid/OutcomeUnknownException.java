package io.zooid;

import java.util.List;

/**
 * A write's reply was lost and whether it applied could not be determined.
 *
 * <p>For a take, the IDs it would have handed out are leaked: they are never handed out, to this
 * caller or any other, so uniqueness holds. For a push, the push is not repeated and the
 * {@link IDSet} was emptied. {@link #getLeakedIDs()} names the IDs concerned, for an operator to
 * recycle by hand once ZooKeeper is healthy again.
 */
public class OutcomeUnknownException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    private final String operation;
    private final long[] ids;

    /**
     * @param operation {@code "take"} or {@code "push"}
     * @param ids the IDs concerned as start/end pairs
     */
    public OutcomeUnknownException(String message, String category, String operation, long[] ids) {
        super(ErrorCode.OUTCOME_UNKNOWN, message, category);
        this.operation = operation;
        this.ids = ids == null ? new long[0] : ids.clone();
    }

    /** The operation whose outcome is unknown: {@code "take"} or {@code "push"}. */
    public String getOperation() {
        return operation;
    }

    /** The IDs concerned, as ascending ranges. */
    public List<IDRange> getLeakedIDs() {
        return IDRange.fromPairs(getCategory(), ids);
    }

    /** How many IDs are concerned. */
    public long countLeakedIDs() {
        long total = 0;
        for (int i = 0; i + 1 < ids.length; i += 2) {
            total += IDRange.count(ids[i], ids[i + 1]);
        }
        return total;
    }
}
