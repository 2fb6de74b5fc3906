package io.zooid;

/** A leader's fenced write was refused: this process does not lead the group (any more); nothing was written. {@link #getCategory()} names the group. */
public class NotLeaderException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public NotLeaderException(String message, String category) {
        super(ErrorCode.NOT_LEADER, message, category);
    }
}
