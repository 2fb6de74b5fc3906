package io.zooid;

/**
 * Builds the exception for a native failure. The native code calls {@link #create} (looked up
 * once when the library loads) and throws what it returns, so the choice of exception class lives
 * here, in Java.
 */
final class NativeErrors {
    /** Misuse codes, beyond {@link ErrorCode}: a null argument. */
    static final int NULL_ARGUMENT = -1;
    /** Misuse codes, beyond {@link ErrorCode}: a closed or invalid handle. */
    static final int ILLEGAL_STATE = -2;
    /** {@code ZooidError::InvalidArgument}: the caller passed an unusable value. */
    static final int INVALID_ARGUMENT = 1;

    private NativeErrors() {}

    /**
     * The exception for a native failure.
     *
     * @param code an {@link ErrorCode} value or one of the misuse codes above
     * @param message the description
     * @param category the category concerned, or null
     * @param operation the operation concerned ({@code "take"} / {@code "push"}), or null
     * @param ranges IDs concerned as start/end pairs, or null
     */
    static Throwable create(int code, String message, String category, String operation, long[] ranges) {
        switch (code) {
            case NULL_ARGUMENT:
                return new NullPointerException(message);
            case ILLEGAL_STATE:
                return new IllegalStateException(message);
            case INVALID_ARGUMENT:
                return new IllegalArgumentException(message);
            default:
                break;
        }
        ErrorCode errorCode = ErrorCode.fromValue(code);
        switch (errorCode) {
            case EXHAUSTED:
                return new IDsExhaustedException(message, category);
            case NOT_FOUND:
                return new CategoryNotFoundException(message, category);
            case CATEGORY_EXISTS:
                return new CategoryExistsException(message, category);
            case OUT_OF_BOUNDS:
                return new IDsOutOfBoundsException(message, category, ranges);
            case ALREADY_FREE:
                return new IDsAlreadyFreeException(message, category, ranges);
            case CORRUPT_POOL:
                return new CorruptPoolException(message, category);
            case POOL_FULL:
                return new PoolFullException(message, category);
            case CONTENTION:
                return new ContentionException(message, category);
            case OUTCOME_UNKNOWN:
                return new OutcomeUnknownException(message, category, operation, ranges);
            case CONNECTION_LOST:
                return new ConnectionLostException(message, category);
            case TIMEOUT:
                return new OperationTimeoutException(message, category);
            case NOT_LEADER:
                return new NotLeaderException(message, category);
            case SESSION_LOST:
                return new SessionLostException(message, category);
            case QUEUE_FULL:
                return new QueueFullException(message, category);
            case TOO_LARGE:
                return new TooLargeException(message, category);
            case CLOSED:
                return new IllegalStateException(message);
            case NOT_AUTHORIZED:
                return new NotAuthorizedException(message, category);
            case RESERVATION_EXHAUSTED:
                return new ReservationExhaustedException(message, category);
            case WENT_BACKWARDS:
                return new WentBackwardsException(message, category);
            case AUTH_FAILED:
                return new AuthenticationFailedException(message, category);
            default:
                return new IDGeneratorException(errorCode, message, category);
        }
    }
}
