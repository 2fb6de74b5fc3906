package io.zooid;

/**
 * A pool's version is older than one this process saw before (ZooKeeper was restored from an
 * older state), or a durable-record write would have moved the record backwards. Nothing was
 * changed.
 */
public class WentBackwardsException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public WentBackwardsException(String message, String category) {
        super(ErrorCode.WENT_BACKWARDS, message, category);
    }
}
