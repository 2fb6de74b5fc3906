package io.zooid;

/** The category has no free IDs left. Nothing was changed. */
public class IDsExhaustedException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public IDsExhaustedException(String message, String category) {
        super(ErrorCode.EXHAUSTED, message, category);
    }
}
