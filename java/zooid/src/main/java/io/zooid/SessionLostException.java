package io.zooid;

/** The ZooKeeper session that held a claim or a candidacy ended, and it with it; nothing was done on its behalf. {@link #getCategory()} names what was lost. */
public class SessionLostException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public SessionLostException(String message, String category) {
        super(ErrorCode.SESSION_LOST, message, category);
    }
}
