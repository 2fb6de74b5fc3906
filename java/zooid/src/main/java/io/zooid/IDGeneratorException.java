package io.zooid;

/**
 * A zooid operation failed. Subclasses name the conditions a caller can act on; {@link #getCode()}
 * tells them all apart.
 *
 * <p>Misuse is not reported this way: null arguments throw {@link NullPointerException}, invalid
 * ones {@link IllegalArgumentException}, and use of a closed service {@link IllegalStateException}.
 */
public class IDGeneratorException extends Exception {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    private final String category;

    /**
     * @param code why the operation failed
     * @param message the description
     * @param category the category (pool node path) concerned, or null
     */
    public IDGeneratorException(ErrorCode code, String message, String category) {
        super(message);
        this.code = java.util.Objects.requireNonNull(code, "code");
        this.category = category;
    }

    /** Why the operation failed. */
    public ErrorCode getCode() {
        return code;
    }

    /** The category (pool node path) concerned, or null when there is none. */
    public String getCategory() {
        return category;
    }
}
