package io.zooid;

/** ZooKeeper could not be reached before the operation's deadline; nothing was changed. Retrying later may succeed. */
public class ConnectionLostException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public ConnectionLostException(String message, String category) {
        super(ErrorCode.CONNECTION_LOST, message, category);
    }
}
