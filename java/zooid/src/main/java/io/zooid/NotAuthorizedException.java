package io.zooid;

/**
 * The ZooKeeper node's ACL does not grant this client's identity the permission the call needs;
 * nothing was changed. {@link #getCategory()} names the node; the message also names the
 * identity the client authenticated as (never a password).
 */
public class NotAuthorizedException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public NotAuthorizedException(String message, String path) {
        super(ErrorCode.NOT_AUTHORIZED, message, path);
    }
}
