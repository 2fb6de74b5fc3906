package io.zooid;

/** The category's pool node does not hold a valid pool; it was left untouched. An operator must repair it. */
public class CorruptPoolException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public CorruptPoolException(String message, String category) {
        super(ErrorCode.CORRUPT_POOL, message, category);
    }
}
