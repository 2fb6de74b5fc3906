package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Arrays;
import java.util.Collections;
import org.junit.jupiter.api.Test;

/** How the native library is found and loaded: the jar copy, the override, java.library.path. */
class NativeLoaderTest {
    private static final File CLASSES = new File(System.getProperty("zooid.test.classes", "target/classes"));
    private static final File BUNDLED = new File(CLASSES, "native/linux-x86_64/libzooid.so");

    @Test
    void theBuildBundlesTheLibraryUnderItsPlatformPath() {
        assertEquals("linux-x86_64", NativeLoader.platform());
        assertEquals("/native/linux-x86_64/libzooid.so", NativeLoader.resourceName());
        assertTrue(BUNDLED.isFile(), BUNDLED + " must be in the jar's classes");
        assertTrue(NativeLoader.class.getResource("/native/linux-x86_64/libzooid.so") != null);
        assertTrue(NativeLoader.bundledPlatforms().contains("linux-x86_64"), NativeLoader.bundledPlatforms().toString());
    }

    /** Each bundled library is an ELF shared object for the machine its directory names. */
    @Test
    void eachBundledLibraryIsBuiltForItsPlatform() throws Exception {
        File[] dirs = new File(CLASSES, "native").listFiles(File::isDirectory);
        assertTrue(dirs != null && dirs.length > 0, "no native/ directory in " + CLASSES);
        for (File dir : dirs) {
            File lib = new File(dir, "libzooid.so");
            assertTrue(lib.isFile(), lib + " is missing");
            byte[] header = new byte[20];
            try (java.io.InputStream in = new java.io.FileInputStream(lib)) {
                assertEquals(header.length, in.read(header), lib + " is too short");
            }
            assertEquals(0x7f, header[0]);
            assertEquals("ELF", new String(header, 1, 3, java.nio.charset.StandardCharsets.US_ASCII));
            assertEquals(2, header[4], lib + " is a 64-bit ELF");
            assertEquals(1, header[5], lib + " is little-endian");
            assertEquals(3, header[16], lib + " is a shared object (ET_DYN)");
            int machine = (header[18] & 0xff) | (header[19] & 0xff) << 8;
            switch (dir.getName()) {
                case "linux-x86_64":
                    assertEquals(62, machine, lib + " is for EM_X86_64");
                    break;
                case "linux-aarch64":
                    assertEquals(183, machine, lib + " is for EM_AARCH64");
                    break;
                default:
                    throw new AssertionError("unexpected platform directory " + dir);
            }
        }
    }

    /** Two class loaders in one JVM each load zooid: each gets its own extracted copy. */
    @Test
    void twoClassLoadersInOneJvmBothWork() throws Exception {
        try (URLClassLoader first = isolatedLoader();
                URLClassLoader second = isolatedLoader()) {
            Class<?> a = first.loadClass(IDGeneratorService.class.getName());
            Class<?> b = second.loadClass(IDGeneratorService.class.getName());
            assertNotSame(a, b);
            assertNotSame(IDGeneratorService.class, a);
            // Each copy of the library has its own in-memory stores: both can create /probe.
            assertEquals(1L, LoaderProbe.takeOne(first));
            assertEquals(1L, LoaderProbe.takeOne(second));
            java.lang.reflect.InvocationTargetException again = org.junit.jupiter.api.Assertions.assertThrows(
                    java.lang.reflect.InvocationTargetException.class, () -> LoaderProbe.takeOne(first));
            assertEquals("io.zooid.CategoryExistsException", again.getCause().getClass().getName(),
                    "the first copy's store still holds /probe");
            String infoA = (String) a.getMethod("nativeLibraryInfo").invoke(null);
            String infoB = (String) b.getMethod("nativeLibraryInfo").invoke(null);
            // At most one class loader of a JVM loads the cached file itself; the others (this
            // test's own, if it loaded zooid first) load private copies of it.
            assertTrue(infoA.contains("extracted to") || infoA.contains("from the cache"), infoA);
            assertTrue(infoB.contains("extracted to") || infoB.contains("from the cache"), infoB);
            assertNotEquals(infoA, infoB, "each loader loads its own file");
        }
        // And the test's own class loader still works alongside them.
        try (IDGeneratorService service = IDGeneratorService.open("mem:")) {
            IDCategory cat = new IDCategory("/alongside");
            service.createCategory(cat, CategorySpec.of(1, 2));
            assertEquals(1, service.takeIDs(cat, 1).takeID());
        }
    }

    @Test
    void theOverridePropertyWinsAndServesTwoLoaders() throws Exception {
        ChildJvm child = ChildJvm.run(
                Arrays.asList("-D" + NativeLoader.PATH_PROPERTY + "=" + BUNDLED.getAbsolutePath(),
                        "-Dzooid.test.classes=" + CLASSES.getAbsolutePath()),
                LoaderProbe.class, "two-loaders");
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("probe 1: zooid ") && child.output.contains("system property zooid.native.path ("),
                child.toString());
        assertTrue(child.output.contains("a private copy of " + BUNDLED.getAbsolutePath()),
                "the second loader cannot load the same file: it loads a copy\n" + child);
        assertTrue(child.output.contains("probe 1 took 1") && child.output.contains("probe 2 took 1"), child.toString());
    }

    @Test
    void aMissingOverrideFileIsAClearError() throws Exception {
        ChildJvm child = ChildJvm.run(
                Collections.singletonList("-D" + NativeLoader.PATH_PROPERTY + "=/nonexistent/libzooid.so"),
                LoaderProbe.class);
        assertNotEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("UnsatisfiedLinkError")
                && child.output.contains("/nonexistent/libzooid.so named by system property zooid.native.path"),
                child.toString());
    }

    @Test
    void javaLibraryPathIsUsedWhenItHoldsTheLibrary() throws Exception {
        ChildJvm child = ChildJvm.run(
                Arrays.asList("-Djava.library.path=" + BUNDLED.getParentFile().getAbsolutePath(),
                        "-Dzooid.test.classes=" + CLASSES.getAbsolutePath()),
                LoaderProbe.class, "two-loaders");
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("probe 1: zooid ") && child.output.contains("(java.library.path)"), child.toString());
        assertTrue(child.output.contains("java.library.path, a private copy of"), child.toString());
        assertTrue(child.output.contains("probe 2 took 1"), child.toString());
    }

    /** With no properties, the jar's copy comes from the per-user cache in the system's temporary directory. */
    @Test
    void withNoPropertiesTheJarCopyComesFromTheCache() throws Exception {
        ChildJvm child = ChildJvm.run(Collections.<String>emptyList(), LoaderProbe.class);
        assertEquals(0, child.exitCode, child.toString());
        String tmp = System.getenv("TMPDIR") != null && System.getenv("TMPDIR").startsWith("/") ? System.getenv("TMPDIR") : "/tmp";
        String cache = new File(tmp, "zooid-native-" + System.getProperty("user.name")).getPath() + File.separator;
        assertTrue(child.output.contains("the jar (/native/linux-x86_64/libzooid.so), extracted to the cache: " + cache)
                || child.output.contains("the jar (/native/linux-x86_64/libzooid.so), from the cache: " + cache),
                child.toString());
    }

    @Test
    void theLibraryDirectoryPropertyFindsThePlatformSubdirectory() throws Exception {
        File nativeDir = new File(CLASSES, "native").getAbsoluteFile();
        ChildJvm child = ChildJvm.run(
                Arrays.asList("-D" + NativeLoader.DIR_PROPERTY + "=/nonexistent" + File.pathSeparator + nativeDir,
                        "-Dzooid.test.classes=" + CLASSES.getAbsolutePath()),
                LoaderProbe.class, "two-loaders");
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("system property zooid.library.path (" + BUNDLED.getAbsolutePath() + ")"),
                child.toString());
        assertTrue(child.output.contains("probe 2 took 1"), child.toString());
    }

    @Test
    void aLibraryDirectoryWithoutTheLibraryNamesWhatItLookedFor() throws Exception {
        File empty = java.nio.file.Files.createTempDirectory("zooid-empty-").toFile();
        try {
            ChildJvm child = ChildJvm.run(
                    Collections.singletonList("-D" + NativeLoader.DIR_PROPERTY + "=" + empty.getAbsolutePath()),
                    LoaderProbe.class);
            assertNotEquals(0, child.exitCode, child.toString());
            assertTrue(child.output.contains("UnsatisfiedLinkError")
                    && child.output.contains("system property zooid.library.path")
                    && child.output.contains(new File(new File(empty, "linux-x86_64"), "libzooid.so").getAbsolutePath())
                    && child.output.contains(new File(empty, "libzooid.so").getAbsolutePath()),
                    child.toString());
        } finally {
            assertTrue(empty.delete());
        }
    }

    /** Without the cache, the jar's copy is extracted to {@code zooid.tmpdir}, and deleted once loaded. */
    @Test
    void theTmpdirPropertyChoosesWhereTheJarCopyIsExtracted() throws Exception {
        File dir = java.nio.file.Files.createTempDirectory("zooid-tmpdir-").toFile();
        try {
            ChildJvm child = ChildJvm.run(
                    Arrays.asList("-D" + NativeLoader.TMPDIR_PROPERTY + "=" + dir.getAbsolutePath(),
                            "-D" + NativeCache.PROPERTY + "=" + NativeCache.OFF),
                    LoaderProbe.class);
            assertEquals(0, child.exitCode, child.toString());
            assertTrue(child.output.contains("extracted to " + dir.getAbsolutePath() + File.separator + "libzooid-"),
                    child.toString());
            String[] left = dir.list();
            assertTrue(left != null && left.length == 0, "the extracted file is deleted once loaded");
        } finally {
            assertTrue(dir.delete());
        }
    }

    @Test
    void anUnknownPlatformNamesWhatWasLookedForAndWhatTheJarCarries() throws Exception {
        ChildJvm child = ChildJvm.run(Collections.singletonList("-Dos.arch=riscv64"), LoaderProbe.class);
        assertNotEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("no native library for platform linux-riscv64")
                && child.output.contains("os.arch riscv64")
                && child.output.contains("looked for /native/linux-riscv64/libzooid.so in this jar, which carries linux-x86_64"),
                child.toString());
    }

    private static URLClassLoader isolatedLoader() throws Exception {
        // Parent null: the bootstrap loader, so io.zooid comes from CLASSES, not from the test's loader.
        return new URLClassLoader(new URL[] {CLASSES.toURI().toURL()}, null);
    }
}
