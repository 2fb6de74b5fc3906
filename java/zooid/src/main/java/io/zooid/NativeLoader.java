package io.zooid;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Loads the zooid native library, trying in order:
 *
 * <ol>
 *   <li>the file named by the system property {@value #PATH_PROPERTY}, if set (and only it);
 *   <li>the directories listed in {@value #DIR_PROPERTY}, if set (and only them): in each,
 *       {@code <os>-<arch>/libzooid.so}, then {@code libzooid.so};
 *   <li>{@code libzooid.so} on {@code java.library.path};
 *   <li>the copy in this jar, {@code /native/<os>-<arch>/libzooid.so}, from the per-user cache
 *       of {@link NativeCache} (extracted there once per library content, keyed by the SHA-256
 *       the build recorded beside it in {@code libzooid.so.sha256}); when the cache is off or
 *       unusable, extracted to a uniquely named temporary file (in {@value #TMPDIR_PROPERTY}, or
 *       the older {@value #LEGACY_TMPDIR_PROPERTY}, if set, else {@code java.io.tmpdir}) that is
 *       deleted once loaded.
 * </ol>
 *
 * <p>The JVM loads a given file in one class loader only. When the file found in steps 1 to 3 is
 * already held by another class loader, a private temporary copy of it is loaded instead, so any
 * number of class loaders in one JVM (web apps, Hadoop and Spark task loaders, tests) can each
 * load zooid; each gets its own copy of the native state.
 */
final class NativeLoader {
    /** System property naming the native library file to load. */
    static final String PATH_PROPERTY = "zooid.native.path";
    /** System property listing directories (path-separator separated) that hold the library. */
    static final String DIR_PROPERTY = "zooid.library.path";
    /** System property naming the directory to extract the bundled library to. */
    static final String TMPDIR_PROPERTY = "zooid.tmpdir";
    /** The earlier name of {@link #TMPDIR_PROPERTY}, still honoured. */
    static final String LEGACY_TMPDIR_PROPERTY = "zooid.native.tmpdir";
    /** The platforms a release jar carries, named as in its {@code /native/} directory. */
    static final String[] KNOWN_PLATFORMS = {"linux-x86_64", "linux-aarch64", "darwin-x86_64", "darwin-aarch64"};

    private static final String LIBRARY = "zooid";

    /** How the library was loaded; null until it is. Guarded by the class lock. */
    private static String loadedFrom;
    /** How long {@link #load} took to find and load the library, in nanoseconds. Guarded by the class lock. */
    private static long loadNanos;

    private NativeLoader() {}

    /** Loads the library once per class loader; throws {@link UnsatisfiedLinkError} if it cannot. */
    static synchronized void load() {
        if (loadedFrom != null) {
            return;
        }
        long start = System.nanoTime();
        String from = find();
        loadNanos = System.nanoTime() - start;
        loadedFrom = from;
    }

    /** Finds and loads the library; returns how it was loaded. */
    private static String find() {
        String override = property(PATH_PROPERTY);
        if (override != null) {
            File file = new File(override).getAbsoluteFile();
            return loadFile(file, "system property " + PATH_PROPERTY);
        }
        String dirs = property(DIR_PROPERTY);
        if (dirs != null) {
            return loadFromDirectories(dirs);
        }
        List<String> tried = new ArrayList<>();
        try {
            System.loadLibrary(LIBRARY);
            return "java.library.path";
        } catch (UnsatisfiedLinkError e) {
            File held = heldByAnotherLoader(e);
            if (held != null) {
                return loadCopy(held, "java.library.path");
            }
            tried.add("java.library.path: " + e.getMessage());
        }
        return loadResource(resourceName(), tried);
    }

    /**
     * How long finding and loading the library took in this class loader (extracting or checking
     * the cached copy included, and the library's {@code JNI_OnLoad}), in nanoseconds; 0 until it
     * is loaded.
     */
    static synchronized long loadNanos() {
        return loadNanos;
    }

    /** How the library was loaded, for diagnostics; null if it is not loaded. */
    static synchronized String loadedFrom() {
        return loadedFrom;
    }

    /** {@code <os>-<arch>} as used in the jar's {@code /native/} directory. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) {
            os = "linux";
        } else if (os.startsWith("mac") || os.startsWith("darwin")) {
            os = "darwin";
        } else if (os.startsWith("windows")) {
            os = "windows";
        }
        if (arch.equals("amd64") || arch.equals("x86_64")) {
            arch = "x86_64";
        } else if (arch.equals("aarch64") || arch.equals("arm64")) {
            arch = "aarch64";
        }
        return os + "-" + arch;
    }

    /** The jar resource holding this platform's library. */
    static String resourceName() {
        return resourceName(platform());
    }

    private static String resourceName(String platform) {
        return "/native/" + platform + "/" + System.mapLibraryName(LIBRARY);
    }

    /** The platforms of {@link #KNOWN_PLATFORMS} this jar carries a library for. */
    static List<String> bundledPlatforms() {
        List<String> bundled = new ArrayList<>();
        for (String platform : KNOWN_PLATFORMS) {
            String os = platform.substring(0, platform.indexOf('-'));
            String file = os.equals("darwin") ? "libzooid.dylib" : "libzooid.so";
            if (NativeLoader.class.getResource("/native/" + platform + "/" + file) != null) {
                bundled.add(platform);
            }
        }
        return bundled;
    }

    /** A system property's value, or null when it is unset or empty. */
    private static String property(String name) {
        String value = System.getProperty(name);
        return value == null || value.isEmpty() ? null : value;
    }

    private static String loadFromDirectories(String dirs) {
        String name = System.mapLibraryName(LIBRARY);
        List<File> candidates = new ArrayList<>();
        for (String dir : dirs.split(File.pathSeparator)) {
            if (dir.isEmpty()) {
                continue;
            }
            File base = new File(dir).getAbsoluteFile();
            candidates.add(new File(new File(base, platform()), name));
            candidates.add(new File(base, name));
        }
        for (File candidate : candidates) {
            if (candidate.isFile()) {
                return loadFile(candidate, "system property " + DIR_PROPERTY);
            }
        }
        throw new UnsatisfiedLinkError("zooid: no native library for platform " + platform() + " ("
                + describeHost() + ") in the directories named by system property " + DIR_PROPERTY
                + ": looked for " + candidates);
    }

    private static String loadFile(File file, String source) {
        try {
            System.load(file.getPath());
            return source + " (" + file + ")";
        } catch (UnsatisfiedLinkError e) {
            if (isHeldByAnotherLoader(e)) {
                return loadCopy(file, source);
            }
            throw linkError("cannot load " + file + " named by " + source + ": " + e.getMessage(), e);
        }
    }

    /** Loads a private temporary copy of {@code file}. */
    private static String loadCopy(File file, String source) {
        try (InputStream in = Files.newInputStream(file.toPath())) {
            return extractAndLoad(in, source + ", a private copy of " + file);
        } catch (IOException e) {
            throw linkError("cannot copy " + file + " (from " + source + "): " + e, e);
        }
    }

    private static String loadResource(String resource, List<String> tried) {
        if (NativeLoader.class.getResource(resource) == null) {
            List<String> bundled = bundledPlatforms();
            throw new UnsatisfiedLinkError("zooid: no native library for platform " + platform() + " ("
                    + describeHost() + "): looked for " + resource + " in this jar, which carries "
                    + (bundled.isEmpty() ? "none" : String.join(", ", bundled)) + "; and "
                    + String.join("; ", tried) + ". Set -D" + PATH_PROPERTY + "=/path/to/"
                    + System.mapLibraryName(LIBRARY) + " or -D" + DIR_PROPERTY + "=DIR.");
        }
        String source = "the jar (" + resource + ")";
        NativeCache cache = NativeCache.configured(tmpdirOverride());
        String notCached;
        if (cache == null) {
            notCached = "the cache is off";
        } else {
            NativeCache.Entry entry = null;
            try {
                entry = cache.install(bundled(resource), System.mapLibraryName(LIBRARY),
                        () -> NativeLoader.class.getResourceAsStream(resource));
                notCached = null;
            } catch (IOException | RuntimeException e) {
                notCached = "cache " + cache.root() + " unusable: " + e.getMessage();
            }
            if (entry != null) {
                File file = entry.file.toFile();
                String cached = source + (entry.extracted ? ", extracted to the cache: " : ", from the cache: ") + file;
                try {
                    System.load(file.getPath());
                    return cached;
                } catch (UnsatisfiedLinkError e) {
                    if (isHeldByAnotherLoader(e)) {
                        return loadCopy(file, cached);
                    }
                    notCached = "cannot load " + file + ": " + e.getMessage();
                }
            }
        }
        try (InputStream stream = NativeLoader.class.getResourceAsStream(resource)) {
            if (stream == null) {
                throw new IOException("resource " + resource + " vanished");
            }
            return extractAndLoad(stream, source) + " (not cached: " + notCached + ")";
        } catch (IOException e) {
            throw linkError("cannot extract " + resource + ": " + e, e);
        }
    }

    /**
     * What the cached copy of the bundled library must be. Its SHA-256 was recorded by the build
     * in {@code <resource>.sha256}, its size and CRC-32 are in the jar's directory: reading them
     * costs nothing. Whatever is missing (a resource not in a jar, a jar without the hash) is
     * computed from the resource's bytes.
     */
    static NativeCache.Library bundled(String resource) throws IOException {
        String sha256 = recordedSha256(resource);
        long size = -1;
        long crc32 = -1;
        java.net.URL url = NativeLoader.class.getResource(resource);
        if (url != null && url.getProtocol().equals("jar")) {
            try {
                java.net.URLConnection connection = url.openConnection();
                if (connection instanceof java.net.JarURLConnection) {
                    java.net.JarURLConnection jar = (java.net.JarURLConnection) connection;
                    // A jar file of its own, closed here: not one left open in the JVM's cache.
                    jar.setUseCaches(false);
                    try (java.util.jar.JarFile file = jar.getJarFile()) {
                        java.util.jar.JarEntry entry = file.getJarEntry(jar.getEntryName());
                        if (entry != null) {
                            size = entry.getSize();
                            crc32 = entry.getCrc();
                        }
                    }
                }
            } catch (IOException | RuntimeException e) {
                // A jar this JVM cannot open as such (a nested jar of an application server's
                // own scheme): the bytes are read below instead.
                size = -1;
                crc32 = -1;
            }
        }
        if (sha256 != null && size >= 0 && crc32 >= 0) {
            return new NativeCache.Library(sha256, size, crc32);
        }
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException("resource " + resource + " vanished");
            }
            if (sha256 != null) {
                long[] read = NativeCache.copy(in, null);
                return new NativeCache.Library(sha256, read[0], read[1]);
            }
            java.security.MessageDigest digest = NativeCache.sha256();
            long[] read = NativeCache.copy(new java.security.DigestInputStream(in, digest), null);
            return new NativeCache.Library(NativeCache.hex(digest.digest()), read[0], read[1]);
        }
    }

    /** The SHA-256 the build recorded in {@code <resource>.sha256}, or null. */
    private static String recordedSha256(String resource) throws IOException {
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource + ".sha256")) {
            if (in == null) {
                return null;
            }
            byte[] content = new byte[256];
            int length = 0;
            int n;
            while (length < content.length && (n = in.read(content, length, content.length - length)) >= 0) {
                length += n;
            }
            return NativeCache.parseRecorded(java.util.Arrays.copyOf(content, length));
        }
    }

    /** The directory the loader was told to extract to ({@value #TMPDIR_PROPERTY}, or the older name), or null. */
    private static String tmpdirOverride() {
        String dir = property(TMPDIR_PROPERTY);
        return dir != null ? dir : property(LEGACY_TMPDIR_PROPERTY);
    }

    /** Copies {@code in} to a new, uniquely named temporary file, loads it and deletes it. */
    private static String extractAndLoad(InputStream in, String source) throws IOException {
        String dirName = property(TMPDIR_PROPERTY);
        String dirSource = TMPDIR_PROPERTY;
        if (dirName == null) {
            dirName = property(LEGACY_TMPDIR_PROPERTY);
            dirSource = LEGACY_TMPDIR_PROPERTY;
        }
        if (dirName == null) {
            dirName = System.getProperty("java.io.tmpdir");
            dirSource = "java.io.tmpdir";
        }
        Path dir = Paths.get(dirName);
        Files.createDirectories(dir);
        Path file = Files.createTempFile(dir, "libzooid-", suffix());
        try {
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            System.load(file.toAbsolutePath().toString());
        } catch (UnsatisfiedLinkError e) {
            throw linkError("cannot load " + source + ", extracted to " + file + " (directory from "
                    + dirSource + "): " + e.getMessage() + ". If that directory is on a file system "
                    + "mounted noexec, set -D" + TMPDIR_PROPERTY + "=DIR to one that allows executables.", e);
        } finally {
            // Once mapped, the library no longer needs its file (Linux, macOS). Where it cannot be
            // deleted while loaded, delete it when the JVM exits.
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                file.toFile().deleteOnExit();
            }
        }
        return source + ", extracted to " + file;
    }

    /** The extension of a library file on this platform, from {@code System.mapLibraryName}. */
    private static String suffix() {
        String name = System.mapLibraryName(LIBRARY);
        int dot = name.lastIndexOf('.');
        return dot >= 0 ? name.substring(dot) : ".so";
    }

    private static String describeHost() {
        return "os.name " + System.getProperty("os.name") + ", os.arch " + System.getProperty("os.arch");
    }

    /** The file on java.library.path that another class loader holds, or null. */
    private static File heldByAnotherLoader(UnsatisfiedLinkError e) {
        if (!isHeldByAnotherLoader(e)) {
            return null;
        }
        String name = System.mapLibraryName(LIBRARY);
        for (String dir : System.getProperty("java.library.path", "").split(File.pathSeparator)) {
            File candidate = new File(dir.isEmpty() ? "." : dir, name).getAbsoluteFile();
            if (candidate.isFile()) {
                return candidate;
            }
        }
        return null;
    }

    private static boolean isHeldByAnotherLoader(UnsatisfiedLinkError e) {
        String message = e.getMessage();
        return message != null && message.contains("already loaded in another classloader");
    }

    private static UnsatisfiedLinkError linkError(String message, Throwable cause) {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("zooid: " + message);
        error.initCause(cause);
        return error;
    }
}
