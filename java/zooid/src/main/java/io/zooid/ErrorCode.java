package io.zooid;

/**
 * Why an {@link IDGeneratorException} was thrown. The numbers are those of the C API's
 * {@code zooid_status} for the same conditions (the native library's {@code ErrorKind} numbers;
 * a unit test there checks that every kind is declared here with its number).
 */
public enum ErrorCode {
    /** The category has no free IDs left ({@link IDsExhaustedException}). */
    EXHAUSTED(2),
    /** The category's pool node does not exist ({@link CategoryNotFoundException}). */
    NOT_FOUND(3),
    /** {@code createCategory} found the node already there ({@link CategoryExistsException}). */
    CATEGORY_EXISTS(4),
    /** Pushed IDs lie outside the category's bounds ({@link IDsOutOfBoundsException}). */
    OUT_OF_BOUNDS(5),
    /** Pushed IDs are already free: a double push ({@link IDsAlreadyFreeException}). */
    ALREADY_FREE(6),
    /** The pool node is not a valid pool ({@link CorruptPoolException}). */
    CORRUPT_POOL(7),
    /** The push would make the pool node too large ({@link PoolFullException}). */
    POOL_FULL(8),
    /** Version conflicts went on past the retry budget ({@link ContentionException}). */
    CONTENTION(9),
    /** A write's reply was lost and its outcome is unknown ({@link OutcomeUnknownException}). */
    OUTCOME_UNKNOWN(10),
    /** ZooKeeper could not be reached in time ({@link ConnectionLostException}). */
    CONNECTION_LOST(11),
    /** The operation ran out of time ({@link OperationTimeoutException}). */
    TIMEOUT(12),
    /** The pool node's 32-bit data version is about to wrap; recreate the category. */
    VERSION_WRAP(13),
    /** ZooKeeper refused or failed the request in a way no other code names. */
    STORE(14),
    /** A blocking call was made from an async runtime thread. */
    RUNTIME_THREAD(15),
    /** The native code panicked (a bug in zooid); the JVM is unaffected. */
    PANIC(17),
    /** Any other failure of the native code. */
    OTHER(18),
    /** A fenced write was refused: this process no longer leads the group ({@link NotLeaderException}). */
    NOT_LEADER(19),
    /** The ZooKeeper session holding a claim or candidacy ended ({@link SessionLostException}). */
    SESSION_LOST(20),
    /** The queue holds its maximum number of items ({@link QueueFullException}). */
    QUEUE_FULL(21),
    /** A value is over its size limit ({@link TooLargeException}). */
    TOO_LARGE(22),
    /** The handle was closed or the candidacy resigned (thrown as {@link IllegalStateException}). */
    CLOSED(23),
    /** The node's ACL does not grant this client's identity the permission ({@link NotAuthorizedException}). */
    NOT_AUTHORIZED(24),
    /** The durable reservation is used up and was not raised in time ({@link ReservationExhaustedException}). */
    RESERVATION_EXHAUSTED(25),
    /** A pool or durable record went backwards ({@link WentBackwardsException}). */
    WENT_BACKWARDS(26),
    /** ZooKeeper refused the credentials when the session was opened ({@link AuthenticationFailedException}). */
    AUTH_FAILED(27),
    /** A call made in a process forked from the one where zooid started (the JVM never forks). */
    FORKED(28);

    private final int value;

    ErrorCode(int value) {
        this.value = value;
    }

    /** The stable number of this code. */
    public int getValue() {
        return value;
    }

    /** The code numbered {@code value}, or {@link #OTHER} for an unknown number. */
    public static ErrorCode fromValue(int value) {
        for (ErrorCode code : values()) {
            if (code.value == value) {
                return code;
            }
        }
        return OTHER;
    }
}
