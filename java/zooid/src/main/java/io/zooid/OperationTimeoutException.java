package io.zooid;

/** The operation ran out of time; nothing was changed. */
public class OperationTimeoutException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public OperationTimeoutException(String message, String category) {
        super(ErrorCode.TIMEOUT, message, category);
    }
}
