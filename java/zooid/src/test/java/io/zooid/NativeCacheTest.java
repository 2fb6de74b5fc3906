package io.zooid;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The cache the bundled library is extracted to once per user, node and library content
 * ({@link NativeCache}): racing extractions, damaged cached files, directories it must not trust.
 */
class NativeCacheTest {
    private static final File CLASSES = new File(System.getProperty("zooid.test.classes", "target/classes"));
    private static final File BUNDLED = new File(CLASSES, "native/linux-x86_64/libzooid.so");
    private static final Pattern LOAD_US = Pattern.compile("probe 1 load us (\\d+)");

    private Path dir;

    @BeforeEach
    void makeDir() throws IOException {
        dir = Files.createTempDirectory("zooid-cache-test-");
    }

    @AfterEach
    void removeDir() throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
                if (!Files.isSymbolicLink(path)) {
                    path.toFile().setWritable(true);
                }
                Files.delete(path);
            }
        }
    }

    private static String hash() throws IOException {
        return NativeLoader.bundled(NativeLoader.resourceName()).sha256;
    }

    private static List<String> cacheOption(Path root) {
        return Collections.singletonList("-D" + NativeCache.PROPERTY + "=" + root);
    }

    /** The build records each bundled library's SHA-256 beside it, and it is the library's. */
    @Test
    void theBuildRecordsTheLibrarysHash() throws IOException {
        File recorded = new File(BUNDLED.getPath() + ".sha256");
        assertTrue(recorded.isFile(), recorded + " is in the jar's classes");
        String text = NativeCache.parseRecorded(Files.readAllBytes(recorded.toPath()));
        assertEquals(NativeCache.sha256Of(BUNDLED.toPath()), text);
        assertEquals(text, hash());
    }

    /** The first JVM extracts into the cache, the second loads that file as it is. */
    @Test
    void theFirstJvmExtractsAndTheNextLoadsTheCachedFile() throws Exception {
        Path root = dir.resolve("cache");
        Path file = root.resolve(hash()).resolve("libzooid.so");
        ChildJvm cold = ChildJvm.run(cacheOption(root), LoaderProbe.class);
        assertEquals(0, cold.exitCode, cold.toString());
        assertTrue(cold.output.contains("the jar (/native/linux-x86_64/libzooid.so), extracted to the cache: " + file), cold.toString());
        ChildJvm warm = ChildJvm.run(cacheOption(root), LoaderProbe.class);
        assertEquals(0, warm.exitCode, warm.toString());
        assertTrue(warm.output.contains("the jar (/native/linux-x86_64/libzooid.so), from the cache: " + file), warm.toString());
        System.out.println("NativeCacheTest: load cold " + loadMicros(cold) + " us, warm " + loadMicros(warm) + " us");

        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(root)));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent())));
        assertEquals(hash(), NativeCache.sha256Of(file));
        try (Stream<Path> left = Files.list(file.getParent())) {
            assertEquals(Collections.singletonList(file), left.collect(java.util.stream.Collectors.toList()),
                    "nothing but the library in its directory");
        }
    }

    /** Several JVMs starting at once on an empty cache all load the library; the cache ends whole. */
    @Test
    void jvmsRacingIntoAnEmptyCacheAllLoadIt() throws Exception {
        Path root = dir.resolve("cache");
        Path file = root.resolve(hash()).resolve("libzooid.so");
        int jvms = 4;
        ExecutorService pool = Executors.newFixedThreadPool(jvms);
        try {
            List<Future<ChildJvm>> children = new ArrayList<>();
            for (int i = 0; i < jvms; i++) {
                children.add(pool.submit(() -> ChildJvm.run(cacheOption(root), LoaderProbe.class)));
            }
            for (Future<ChildJvm> child : children) {
                ChildJvm done = child.get(5, TimeUnit.MINUTES);
                assertEquals(0, done.exitCode, done.toString());
                assertTrue(done.output.contains("the cache: " + file) && done.output.contains("probe 1 took 1"),
                        done.toString());
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(hash(), NativeCache.sha256Of(file));
        try (Stream<Path> left = Files.list(file.getParent())) {
            assertEquals(1, left.count(), "no temporary file left beside the library");
        }
    }

    /**
     * Threads of one JVM installing at the same moment, each writing its own copy (their sources
     * wait for one another before they hand over their bytes): every one gets the same, whole file.
     */
    @Test
    void concurrentInstallsAllSucceedWithTheWholeFile() throws Exception {
        byte[] library = Files.readAllBytes(BUNDLED.toPath());
        NativeCache.Library expected = NativeLoader.bundled(NativeLoader.resourceName());
        assertEquals(library.length, expected.size);
        String sha256 = expected.sha256;
        NativeCache cache = NativeCache.at(dir.resolve("cache"));
        int threads = 6;
        CountDownLatch allWriting = new CountDownLatch(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<NativeCache.Entry>> installs = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                installs.add(pool.submit(() -> cache.install(expected, "libzooid.so", () -> {
                    allWriting.countDown();
                    try {
                        allWriting.await(1, TimeUnit.MINUTES);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return new ByteArrayInputStream(library);
                })));
            }
            Set<Path> files = new HashSet<>();
            int extracted = 0;
            for (Future<NativeCache.Entry> install : installs) {
                NativeCache.Entry entry = install.get(1, TimeUnit.MINUTES);
                files.add(entry.file);
                extracted += entry.extracted ? 1 : 0;
            }
            assertEquals(Collections.singleton(cache.fileFor(sha256, "libzooid.so")), files);
            assertEquals(threads, extracted, "each wrote its copy: the race happened");
        } finally {
            pool.shutdownNow();
        }
        assertArrayEquals(library, Files.readAllBytes(cache.fileFor(sha256, "libzooid.so")));
        NativeCache.Entry again = cache.install(expected, "libzooid.so", () -> {
            throw new AssertionError("a whole cached file is not written again");
        });
        assertFalse(again.extracted);
    }

    /** A truncated cached file (a crash while it was written) is replaced, never loaded. */
    @Test
    void aTruncatedCachedFileIsReplacedNotLoaded() throws Exception {
        byte[] library = Files.readAllBytes(BUNDLED.toPath());
        damagedCacheIsRepaired(Arrays.copyOf(library, library.length / 3));
    }

    /** So is a cached file of the right size with a byte changed. */
    @Test
    void aCorruptedCachedFileOfTheRightSizeIsReplacedNotLoaded() throws Exception {
        byte[] library = Files.readAllBytes(BUNDLED.toPath());
        library[library.length / 2] ^= 0x5a;
        damagedCacheIsRepaired(library);
    }

    private void damagedCacheIsRepaired(byte[] damaged) throws Exception {
        Path root = dir.resolve("cache");
        Path file = root.resolve(hash()).resolve("libzooid.so");
        Files.createDirectories(file.getParent(), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Files.write(file, damaged);
        ChildJvm child = ChildJvm.run(cacheOption(root), LoaderProbe.class);
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("extracted to the cache: " + file), child.toString());
        assertEquals(hash(), NativeCache.sha256Of(file));
    }

    /** A cache directory others can write to is not used: a private copy is loaded instead. */
    @Test
    void aCacheDirectoryWritableByOthersIsNotUsed() throws Exception {
        Path root = Files.createDirectory(dir.resolve("cache"));
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwxrwxrwx"));
        ChildJvm child = ChildJvm.run(cacheOption(root), LoaderProbe.class);
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("(not cached: cache " + root + " unusable: " + root + " is writable by others"),
                child.toString());
        assertTrue(child.output.contains("the jar (/native/linux-x86_64/libzooid.so), extracted to "), child.toString());
        try (Stream<Path> left = Files.list(root)) {
            assertEquals(0, left.count(), "nothing written into it");
        }
    }

    /** Nor one owned by another user (checked when the tests run as root, who can give it away). */
    @Test
    void aCacheDirectoryOwnedBySomeoneElseIsNotUsed() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to give a directory away");
        Path root = Files.createDirectory(dir.resolve("cache"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        UserPrincipal nobody = root.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
        Files.setOwner(root, nobody);
        ChildJvm child = ChildJvm.run(cacheOption(root), LoaderProbe.class);
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("(not cached: cache " + root + " unusable: " + root + " is owned by "), child.toString());
        assertThrows(IOException.class, () -> NativeCache.at(root).install(NativeLoader.bundled(NativeLoader.resourceName()), "libzooid.so", () -> null));
    }

    /** A cache path that is a file, or one the loader cannot create, falls back too. */
    @Test
    void anUnusableCachePathFallsBack() throws Exception {
        Path file = Files.write(dir.resolve("not-a-directory"), new byte[] {1});
        ChildJvm child = ChildJvm.run(cacheOption(file), LoaderProbe.class);
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("(not cached: cache " + file + " unusable: "), child.toString());

        ChildJvm under = ChildJvm.run(cacheOption(file.resolve("below")), LoaderProbe.class);
        assertEquals(0, under.exitCode, under.toString());
        assertTrue(under.output.contains("(not cached: cache " + file.resolve("below") + " unusable: "), under.toString());
    }

    /** A symbolic link in the cache's own place (someone else's, in a shared /tmp) is not followed. */
    @Test
    void aLinkInPlaceOfTheCacheDirectoryIsNotFollowed() throws Exception {
        Path target = Files.createDirectory(dir.resolve("elsewhere"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path link = Files.createSymbolicLink(dir.resolve("zooid-native-someone"), target);
        IOException refused = assertThrows(IOException.class,
                () -> NativeCache.at(link).install(NativeLoader.bundled(NativeLoader.resourceName()), "libzooid.so", () -> null));
        assertTrue(refused.getMessage().contains("symbolic link"), refused.toString());
        assertTrue(Files.isSymbolicLink(link) && !Files.exists(target.resolve(hash()), LinkOption.NOFOLLOW_LINKS));
    }

    /** {@code off} turns the cache off: a private copy, deleted once loaded, as without a cache. */
    @Test
    void offTurnsTheCacheOff() throws Exception {
        List<String> options = Arrays.asList("-D" + NativeCache.PROPERTY + "=off", "-D" + NativeLoader.TMPDIR_PROPERTY + "=" + dir);
        ChildJvm child = ChildJvm.run(options, LoaderProbe.class);
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("extracted to " + dir + File.separator + "libzooid-")
                && child.output.contains("(not cached: the cache is off)"), child.toString());
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(0, left.count(), "the private copy is deleted once loaded");
        }
    }

    /** The environment variable names the cache when the property does not. */
    @Test
    void theEnvironmentVariableNamesTheCache() throws Exception {
        Path root = dir.resolve("from-env");
        ChildJvm child = ChildJvm.run(Collections.<String>emptyList(),
                Collections.singletonMap(NativeCache.ENV, root.toString()), LoaderProbe.class);
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("extracted to the cache: " + root.resolve(hash()).resolve("libzooid.so")),
                child.toString());
    }

    /**
     * Without a cache named, the cache is {@code zooid-native-<user>} in {@code zooid.tmpdir} if set
     * (else in the system's temporary directory).
     */
    @Test
    void theTmpdirPropertyHoldsTheDefaultCache() throws Exception {
        List<String> options = Collections.singletonList("-D" + NativeLoader.TMPDIR_PROPERTY + "=" + dir);
        ChildJvm child = ChildJvm.run(options, LoaderProbe.class);
        assertEquals(0, child.exitCode, child.toString());
        Path expected = dir.resolve("zooid-native-" + System.getProperty("user.name")).resolve(hash()).resolve("libzooid.so");
        assertTrue(child.output.contains("extracted to the cache: " + expected), child.toString());
    }

    /**
     * From a jar, as users load zooid: the size and CRC-32 come from the jar's directory, the
     * SHA-256 from the resource the build wrote; the second JVM loads the first one's file.
     */
    @Test
    void fromAJarTheSecondJvmLoadsTheFirstOnesFile() throws Exception {
        Path jar = dir.resolve("zooid.jar");
        try (java.util.jar.JarOutputStream out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar));
                Stream<Path> files = Files.walk(CLASSES.toPath())) {
            for (Path file : (Iterable<Path>) files.filter(Files::isRegularFile).sorted()::iterator) {
                out.putNextEntry(new java.util.jar.JarEntry(CLASSES.toPath().relativize(file).toString().replace(File.separatorChar, '/')));
                Files.copy(file, out);
                out.closeEntry();
            }
        }
        String testClasses = new File(LoaderProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI()).getPath();
        Path root = dir.resolve("cache");
        Path file = root.resolve(hash()).resolve("libzooid.so");
        List<String> options = Arrays.asList("-D" + NativeCache.PROPERTY + "=" + root, "-cp", jar + File.pathSeparator + testClasses);
        ChildJvm cold = ChildJvm.runWithOwnClasspath(options, LoaderProbe.class);
        assertEquals(0, cold.exitCode, cold.toString());
        assertTrue(cold.output.contains("the jar (/native/linux-x86_64/libzooid.so), extracted to the cache: " + file), cold.toString());
        ChildJvm warm = ChildJvm.runWithOwnClasspath(options, LoaderProbe.class);
        assertEquals(0, warm.exitCode, warm.toString());
        assertTrue(warm.output.contains("the jar (/native/linux-x86_64/libzooid.so), from the cache: " + file), warm.toString());
        System.out.println("NativeCacheTest, from a jar: load cold " + loadMicros(cold) + " us, warm " + loadMicros(warm) + " us");
    }

    private static long loadMicros(ChildJvm child) {
        Matcher m = LOAD_US.matcher(child.output);
        assertTrue(m.find(), child.toString());
        return Long.parseLong(m.group(1));
    }
}
