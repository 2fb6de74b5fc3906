package io.zooid;

/**
 * ZooKeeper refused this client's credentials (a wrong password, an unknown user or principal)
 * when the session was opened; nothing was done. {@link #getCategory()} is the connect string;
 * the message names the identity the client tried (never a password).
 */
public class AuthenticationFailedException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public AuthenticationFailedException(String message, String connectString) {
        super(ErrorCode.AUTH_FAILED, message, connectString);
    }
}
