package io.zooid;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One ZooKeeper ACL entry, {@code scheme:id:perms} as ZooKeeper's CLI writes it: {@code
 * world:anyone:r}, {@code sasl:app:cdrwa}, {@code auth::cdrwa} (the identities of the creating
 * session), {@code digest:user:BASE64SHA1:rw}. Permissions are letters of {@code cdrwa}. The
 * native library checks the entry again when it is used.
 */
public final class ZooKeeperAcl {
    private static final Pattern PERMS = Pattern.compile("[cdrwa]+");

    private final String scheme;
    private final String id;
    private final String perms;

    private ZooKeeperAcl(String scheme, String id, String perms) {
        if (scheme.isEmpty() || scheme.indexOf(':') >= 0 || scheme.indexOf(',') >= 0) {
            throw new IllegalArgumentException("ACL scheme " + scheme + ": not a scheme name");
        }
        if (id.indexOf(',') >= 0) {
            throw new IllegalArgumentException("ACL id " + id + ": contains ','");
        }
        if (!PERMS.matcher(perms).matches()) {
            throw new IllegalArgumentException("ACL permissions " + perms + ": use letters of cdrwa");
        }
        this.scheme = scheme;
        this.id = id;
        this.perms = perms;
    }

    /** Any scheme, id and permissions. */
    public static ZooKeeperAcl of(String scheme, String id, String perms) {
        return new ZooKeeperAcl(
                Objects.requireNonNull(scheme, "scheme"),
                Objects.requireNonNull(id, "id"),
                Objects.requireNonNull(perms, "perms"));
    }

    /** Parses {@code scheme:id:perms} (the id may contain ':'). */
    public static ZooKeeperAcl parse(String text) {
        Objects.requireNonNull(text, "text");
        int first = text.indexOf(':');
        int last = text.lastIndexOf(':');
        if (first < 0 || last == first) {
            throw new IllegalArgumentException("ACL " + text + ": write scheme:id:perms");
        }
        return new ZooKeeperAcl(text.substring(0, first), text.substring(first + 1, last), text.substring(last + 1));
    }

    /** {@code world:anyone:r}: everyone may read. */
    public static ZooKeeperAcl worldRead() {
        return new ZooKeeperAcl("world", "anyone", "r");
    }

    /** {@code sasl:PRINCIPAL:perms}: a SASL user (DIGEST-MD5 user or Kerberos principal). */
    public static ZooKeeperAcl sasl(String principal, String perms) {
        return of("sasl", principal, perms);
    }

    /** {@code auth::perms}: every identity the creating session authenticated as. */
    public static ZooKeeperAcl creator(String perms) {
        return of("auth", "", perms);
    }

    @Override
    public String toString() {
        return scheme + ":" + id + ":" + perms;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof ZooKeeperAcl && other.toString().equals(toString());
    }

    @Override
    public int hashCode() {
        return toString().hashCode();
    }
}
