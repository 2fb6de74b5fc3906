package io.zooid;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Set;
import java.util.function.Supplier;
import java.util.zip.CRC32;

/**
 * The per-user cache of native libraries extracted from the jar, one file per library content:
 * {@code <root>/<sha256>/libzooid.so}. The tasks of one node (YARN containers, Spark executors)
 * extract a given library once and then load the cached file.
 *
 * <p>Safety:
 *
 * <ul>
 *   <li>the root and each {@code <sha256>} directory are created {@code 0700}, and used only if
 *       they are real directories (not symbolic links) owned by this process's user and writable
 *       by no one else, so no other user can place or swap a file there;
 *   <li>a cached file is loaded only after its size and CRC-32 matched the bundled library's (a
 *       truncated or corrupted file is replaced, never loaded). The SHA-256 names the library's
 *       directory: distinct libraries never share a file. The check against accidents is the
 *       CRC-32, which costs a few milliseconds where a SHA-256 of an 8 MB file cost a fresh JVM
 *       about 150 (its SHA-256 code not compiled yet); against other users, the directories'
 *       ownership and mode, since a user who can write there could defeat any check;
 *   <li>a file is written under a unique temporary name in the same directory, checked, and
 *       renamed into place atomically: a reader never sees a half-written file, and two processes
 *       extracting at once both succeed (the last rename wins; both files are identical).
 * </ul>
 *
 * Anything else (no POSIX file system, a directory that fails a check, an I/O error) is an
 * {@link IOException}; the loader then extracts a private copy as it did without a cache.
 */
final class NativeCache {
    /** System property naming the cache directory, or {@value #OFF} for no cache. */
    static final String PROPERTY = "zooid.native.cache";
    /** Environment variable naming the cache directory, or {@value #OFF}; the property wins. */
    static final String ENV = "ZOOID_NATIVE_CACHE";
    /** The value of {@link #PROPERTY} or {@link #ENV} that turns the cache off. */
    static final String OFF = "off";

    private static final Set<PosixFilePermission> OWNER_ONLY_DIR = PosixFilePermissions.fromString("rwx------");
    private static final Set<PosixFilePermission> OWNER_ONLY_FILE = PosixFilePermissions.fromString("r-x------");

    private final Path root;

    private NativeCache(Path root) {
        this.root = root;
    }

    /** The cache at {@code root}, a directory that need not exist yet. */
    static NativeCache at(Path root) {
        return new NativeCache(root.toAbsolutePath());
    }

    /**
     * The configured cache, or null when it is off: {@value #PROPERTY}, else {@value #ENV}, else
     * {@code <tmpdir>/zooid-native-<user>} with {@code tmpdir} the one the loader was told to use
     * ({@code zooid.tmpdir}) or, if none, the system's ({@code $TMPDIR}, else {@code /tmp}): not
     * {@code java.io.tmpdir}, which YARN points at each container's own directory.
     */
    static NativeCache configured(String tmpdirOverride) {
        String named = System.getProperty(PROPERTY);
        if (named == null || named.isEmpty()) {
            named = System.getenv(ENV);
        }
        if (named != null && !named.isEmpty()) {
            if (named.equalsIgnoreCase(OFF)) {
                return null;
            }
            Path path = Paths.get(named).toAbsolutePath();
            try {
                // The directory the user named may be reached through links of their own.
                path = path.toRealPath();
            } catch (IOException e) {
                // Not there yet: created (without following a link) when first used.
            }
            return at(path);
        }
        String base = tmpdirOverride;
        if (base == null) {
            String env = System.getenv("TMPDIR");
            base = env != null && env.startsWith("/") ? env : "/tmp";
        }
        return at(Paths.get(base, "zooid-native-" + safeUserName()));
    }

    /** The cache's root directory. */
    Path root() {
        return root;
    }

    /** Where the library with this SHA-256 and file name lives in the cache. */
    Path fileFor(String sha256, String fileName) {
        return root.resolve(sha256).resolve(fileName);
    }

    /** What a library's cached copy must be: its SHA-256 (its name in the cache), size and CRC-32. */
    static final class Library {
        /** Lower-case hex SHA-256 of the library: its directory's name. */
        final String sha256;
        /** Its size in bytes. */
        final long size;
        /** Its CRC-32 ({@link CRC32}). */
        final long crc32;

        Library(String sha256, long size, long crc32) {
            this.sha256 = sha256;
            this.size = size;
            this.crc32 = crc32;
        }

        @Override
        public String toString() {
            return "SHA-256 " + sha256 + ", " + size + " bytes, CRC-32 " + Long.toHexString(crc32);
        }
    }

    /** A library file in the cache, as {@link #install} found or wrote it. */
    static final class Entry {
        /** The cached library file, its content checked. */
        final Path file;
        /** Whether this call wrote it (else it was there already). */
        final boolean extracted;

        Entry(Path file, boolean extracted) {
            this.file = file;
            this.extracted = extracted;
        }
    }

    /**
     * The cached file holding {@code library}: the one already there if its size and CRC-32 check
     * out, else a new one copied from {@code source} (whose bytes must be the library's).
     */
    Entry install(Library library, String fileName, Supplier<InputStream> source) throws IOException {
        String sha256 = library.sha256;
        if (!isSha256(sha256)) {
            throw new IOException("not a SHA-256: " + sha256);
        }
        Object owner = ownUser();
        ensureOwnDirectory(root, owner);
        Path dir = root.resolve(sha256);
        ensureOwnDirectory(dir, owner);
        Path file = dir.resolve(fileName);
        if (holds(file, library)) {
            return new Entry(file, false);
        }
        // Missing, or not what it should be (a truncated write before a crash, a corruption):
        // write a fresh copy beside it and rename it over.
        Path temp = Files.createTempFile(dir, fileName + ".", ".part");
        try {
            long[] written;
            try (InputStream in = source.get(); OutputStream out = Files.newOutputStream(temp)) {
                if (in == null) {
                    throw new IOException("the library's bytes are not available");
                }
                written = copy(in, out);
            }
            if (written[0] != library.size || written[1] != library.crc32) {
                throw new IOException("the bundled library read as " + written[0] + " bytes of CRC-32 "
                        + Long.toHexString(written[1]) + ", not " + library);
            }
            Files.setPosixFilePermissions(temp, OWNER_ONLY_FILE);
            moveIntoPlace(temp, file, library);
        } finally {
            Files.deleteIfExists(temp);
        }
        return new Entry(file, true);
    }

    /**
     * Renames {@code temp} to {@code file} atomically, replacing a file there (POSIX rename). Where
     * the platform refuses to replace, another process's copy is there: it is kept if it checks out.
     */
    private static void moveIntoPlace(Path temp, Path file, Library library) throws IOException {
        try {
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (FileAlreadyExistsException e) {
            if (!holds(file, library)) {
                throw new IOException("cannot replace " + file + ", whose content is not the library's: " + e, e);
            }
        }
    }

    /**
     * Creates {@code dir} ({@code 0700}) if it does not exist, then checks it is a directory, not
     * a link, owned by {@code owner} and writable by no one else.
     */
    private static void ensureOwnDirectory(Path dir, Object owner) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            Path parent = dir.getParent();
            if (parent != null && !Files.isDirectory(parent)) {
                Files.createDirectories(parent);
            }
            FileAttribute<Set<PosixFilePermission>> mode = PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIR);
            try {
                Files.createDirectory(dir, mode);
            } catch (FileAlreadyExistsException e) {
                // Another process created it first: checked below like any existing one.
            }
        }
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(dir + " is not a directory (or is a symbolic link)");
        }
        Object dirOwner = owner instanceof Integer
                ? Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS)
                : Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS);
        if (!owner.equals(dirOwner)) {
            throw new IOException(dir + " is owned by " + dirOwner + ", not by this process's user " + owner);
        }
        Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS);
        if (permissions.contains(PosixFilePermission.GROUP_WRITE) || permissions.contains(PosixFilePermission.OTHERS_WRITE)) {
            throw new IOException(dir + " is writable by others (" + PosixFilePermissions.toString(permissions) + ")");
        }
    }

    /**
     * This process's user: its uid (Linux: the owner of {@code /proc/self}), else the user named
     * by {@code user.name}.
     */
    private static Object ownUser() throws IOException {
        Path self = Paths.get("/proc/self");
        if (Files.isDirectory(self)) {
            try {
                return Files.getAttribute(self, "unix:uid");
            } catch (UnsupportedOperationException | IllegalArgumentException e) {
                // No unix attribute view: fall through.
            }
        }
        try {
            UserPrincipal user = self.getFileSystem().getUserPrincipalLookupService()
                    .lookupPrincipalByName(System.getProperty("user.name", ""));
            return user;
        } catch (UnsupportedOperationException e) {
            throw new IOException("cannot tell which user this process runs as: " + e, e);
        }
    }

    /** {@code user.name} reduced to characters safe in a file name. */
    private static String safeUserName() {
        String name = System.getProperty("user.name", "");
        StringBuilder safe = new StringBuilder();
        for (char c : name.toCharArray()) {
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '.' || c == '_' || c == '-';
            safe.append(ok ? c : '_');
        }
        return safe.length() == 0 || safe.charAt(0) == '.' ? "_" + safe : safe.toString();
    }

    /** Whether {@code file} is a regular file (not a link) with the library's size and CRC-32. */
    private static boolean holds(Path file, Library library) throws IOException {
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) || Files.size(file) != library.size) {
            return false;
        }
        try (InputStream in = Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS)) {
            long[] read = copy(in, null);
            return read[0] == library.size && read[1] == library.crc32;
        }
    }

    /** Copies {@code in} to {@code out} (if not null); returns the bytes' count and CRC-32. */
    static long[] copy(InputStream in, OutputStream out) throws IOException {
        CRC32 crc = new CRC32();
        byte[] buffer = new byte[64 * 1024];
        long count = 0;
        int n;
        while ((n = in.read(buffer)) >= 0) {
            crc.update(buffer, 0, n);
            count += n;
            if (out != null) {
                out.write(buffer, 0, n);
            }
        }
        return new long[] {count, crc.getValue()};
    }

    /** Lower-case hex SHA-256 of a file's content. */
    static String sha256Of(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            return copyAndHash(in, null);
        }
    }

    /** Copies {@code in} to {@code out} (if not null); returns the lower-case hex SHA-256 of the bytes. */
    static String copyAndHash(InputStream in, OutputStream out) throws IOException {
        MessageDigest digest = sha256();
        byte[] buffer = new byte[64 * 1024];
        int n;
        while ((n = in.read(buffer)) >= 0) {
            digest.update(buffer, 0, n);
            if (out != null) {
                out.write(buffer, 0, n);
            }
        }
        return hex(digest.digest());
    }

    /** Whether {@code text} is a lower-case hex SHA-256. */
    static boolean isSha256(String text) {
        if (text == null || text.length() != 64) {
            return false;
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
                return false;
            }
        }
        return true;
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }

    static String hex(byte[] bytes) {
        char[] digits = "0123456789abcdef".toCharArray();
        StringBuilder text = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            text.append(digits[(b >> 4) & 0xf]).append(digits[b & 0xf]);
        }
        return text.toString();
    }

    /** The hash as read from a {@code .sha256} resource: its first word, lower-cased; null if none. */
    static String parseRecorded(byte[] content) {
        String text = new String(content, StandardCharsets.US_ASCII).trim();
        int space = text.indexOf(' ');
        String word = (space >= 0 ? text.substring(0, space) : text).toLowerCase(java.util.Locale.ROOT);
        return isSha256(word) ? word : null;
    }
}
