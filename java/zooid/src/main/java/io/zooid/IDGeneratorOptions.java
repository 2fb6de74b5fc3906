package io.zooid;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * How {@link IDGeneratorService#open(String, IDGeneratorOptions)} connects and how long its
 * operations may try. Unset options keep zooid's defaults (session timeout 10 s, operation deadline
 * 30 s, 100 attempts, pool node limit 512 KiB). The service copies the options when it opens;
 * changing them afterwards has no effect on it. Not thread-safe.
 *
 * <p>The native library reads the fields below by name when a service opens
 * ({@code src/jni/options.rs}): 0 and null mean "unset".
 */
public final class IDGeneratorOptions {
    private long sessionTimeoutMillis;
    private String digestUser;
    private String digestPassword;
    private long operationTimeoutMillis;
    private int maxAttempts;
    private long maxPoolBytes;
    private String tlsCa;
    private String tlsCert;
    private String tlsKey;
    /** SASL DIGEST-MD5; set together, and only when the Kerberos fields are null. */
    private String saslDigestUser;
    private String saslDigestPassword;
    /** SASL Kerberos; set together, and only when the digest fields are null. */
    private String kerberosPrincipal;
    private String kerberosKeytab;
    private String jmxName;
    private boolean jmx = true;

    /** Options with every default. */
    public IDGeneratorOptions() {}

    /** The ZooKeeper session timeout (at least 1 ms). */
    public IDGeneratorOptions sessionTimeout(Duration timeout) {
        this.sessionTimeoutMillis = positiveMillis(timeout, "sessionTimeout");
        return this;
    }

    /**
     * ZooKeeper {@code digest} authentication. Categories created with it are readable and
     * writable only by that user.
     *
     * @throws IllegalArgumentException if {@code user} is empty or contains ':'
     */
    public IDGeneratorOptions digestAuth(String user, String password) {
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(password, "password");
        if (user.isEmpty() || user.indexOf(':') >= 0) {
            throw new IllegalArgumentException("digest auth user must be non-empty without ':'");
        }
        this.digestUser = user;
        this.digestPassword = password;
        return this;
    }

    /**
     * TLS to the ensemble's {@code secureClientPort}, trusting the CA certificate(s) in the PEM
     * file {@code caFile}. The connect string must name the servers' secure ports. The file is
     * read when the service opens its session.
     */
    public IDGeneratorOptions tls(Path caFile) {
        this.tlsCa = Objects.requireNonNull(caFile, "caFile").toString();
        this.tlsCert = null;
        this.tlsKey = null;
        return this;
    }

    /**
     * Mutual TLS: as {@link #tls(Path)}, also presenting the client certificate {@code certFile}
     * with its private key {@code keyFile} (both PEM).
     */
    public IDGeneratorOptions tls(Path caFile, Path certFile, Path keyFile) {
        this.tlsCa = Objects.requireNonNull(caFile, "caFile").toString();
        this.tlsCert = Objects.requireNonNull(certFile, "certFile").toString();
        this.tlsKey = Objects.requireNonNull(keyFile, "keyFile").toString();
        return this;
    }

    /**
     * SASL DIGEST-MD5 as {@code user} (a user of the servers' JAAS {@code Server} section). ACL
     * entries {@code sasl:USER} then grant it rights. The password is never shown by {@link
     * #toString()} or in error messages.
     */
    public IDGeneratorOptions saslDigest(String user, String password) {
        this.saslDigestUser = Objects.requireNonNull(user, "user");
        this.saslDigestPassword = Objects.requireNonNull(password, "password");
        this.kerberosPrincipal = null;
        this.kerberosKeytab = null;
        return this;
    }

    /**
     * SASL Kerberos (GSSAPI) as {@code principal}, with its key from {@code keytab}. Needs a
     * native library built with zooid's {@code kerberos} feature; the keytab is process-wide.
     */
    public IDGeneratorOptions saslKerberos(String principal, Path keytab) {
        this.kerberosPrincipal = Objects.requireNonNull(principal, "principal");
        this.kerberosKeytab = Objects.requireNonNull(keytab, "keytab").toString();
        this.saslDigestUser = null;
        this.saslDigestPassword = null;
        return this;
    }

    /** The longest one operation may take, retries included (at least 1 ms). */
    public IDGeneratorOptions operationTimeout(Duration timeout) {
        this.operationTimeoutMillis = positiveMillis(timeout, "operationTimeout");
        return this;
    }

    /** The most write attempts one operation makes on version conflicts (at least 1). */
    public IDGeneratorOptions maxAttempts(int attempts) {
        if (attempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1, got " + attempts);
        }
        this.maxAttempts = attempts;
        return this;
    }

    /** The largest pool node a push may write, in bytes (at least 1). */
    public IDGeneratorOptions maxPoolBytes(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("maxPoolBytes must be at least 1, got " + bytes);
        }
        this.maxPoolBytes = bytes;
        return this;
    }

    /**
     * The {@code name} key of the service's JMX MBean,
     * {@code io.zooid:type=IDGeneratorService,name=NAME} (quoted as JMX requires). Default: the
     * connect string and a number unique within the JVM, such as {@code "zk1:2181/ids#1"}. Opening
     * a second service with a name already registered fails with {@link IllegalArgumentException}.
     */
    public IDGeneratorOptions jmxName(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("jmxName must not be empty");
        }
        this.jmxName = name;
        return this;
    }

    /** Whether the service registers its MBean (default true). */
    public IDGeneratorOptions jmx(boolean enabled) {
        this.jmx = enabled;
        return this;
    }

    String jmxName() {
        return jmxName;
    }

    boolean jmxEnabled() {
        return jmx;
    }

    private static long positiveMillis(Duration duration, String name) {
        Objects.requireNonNull(duration, name);
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, got " + duration);
        }
        long millis;
        try {
            millis = duration.toMillis();
        } catch (ArithmeticException e) {
            millis = Long.MAX_VALUE;
        }
        if (millis < 1) {
            throw new IllegalArgumentException(name + " must be at least 1 ms, got " + duration);
        }
        return millis;
    }

    /** The options, with every password shown as {@code <redacted>}. */
    @Override
    public String toString() {
        return "IDGeneratorOptions{sessionTimeoutMillis=" + sessionTimeoutMillis
                + ", digestAuth=" + (digestUser == null ? "none" : digestUser + ":<redacted>")
                + ", tls=" + (tlsCa == null ? "none" : "ca=" + tlsCa + (tlsCert == null ? "" : ", cert=" + tlsCert + ", key=" + tlsKey))
                + ", sasl=" + (saslDigestUser != null ? "digest:" + saslDigestUser + ":<redacted>"
                        : kerberosPrincipal != null ? "kerberos:" + kerberosPrincipal + ", keytab=" + kerberosKeytab
                        : "none")
                + ", operationTimeoutMillis=" + operationTimeoutMillis
                + ", maxAttempts=" + maxAttempts
                + ", maxPoolBytes=" + maxPoolBytes + "}";
    }
}
