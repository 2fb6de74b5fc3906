package io.zooid;

/** Recording the push would make the pool node larger than its limit (the pool is too fragmented); nothing was changed and the IDs were not recycled. */
public class PoolFullException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public PoolFullException(String message, String category) {
        super(ErrorCode.POOL_FULL, message, category);
    }
}
