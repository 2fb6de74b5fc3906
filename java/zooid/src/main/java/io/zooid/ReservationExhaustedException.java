package io.zooid;

/**
 * The category's durable reservation (its free IDs at or below the ceiling) is used up and the
 * keeper did not raise the ceiling within the wait; nothing was handed out. Free IDs remain above
 * the ceiling: retry later, and check that a {@code zooid keeper} is running.
 */
public class ReservationExhaustedException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public ReservationExhaustedException(String message, String category) {
        super(ErrorCode.RESERVATION_EXHAUSTED, message, category);
    }
}
