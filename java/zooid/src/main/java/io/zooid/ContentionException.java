package io.zooid;

/** Version conflicts with other writers went on past the retry budget; nothing was changed. Retrying later may succeed. */
public class ContentionException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public ContentionException(String message, String category) {
        super(ErrorCode.CONTENTION, message, category);
    }
}
