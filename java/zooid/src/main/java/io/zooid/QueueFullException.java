package io.zooid;

/** The queue holds its maximum number of items; nothing was added. {@link #getCategory()} names the queue. */
public class QueueFullException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public QueueFullException(String message, String category) {
        super(ErrorCode.QUEUE_FULL, message, category);
    }
}
