package io.zooid;

/** A value (a queue item) is over its size limit; nothing was written. */
public class TooLargeException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public TooLargeException(String message, String category) {
        super(ErrorCode.TOO_LARGE, message, category);
    }
}
