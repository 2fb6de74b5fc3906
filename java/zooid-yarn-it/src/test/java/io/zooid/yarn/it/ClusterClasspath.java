package io.zooid.yarn.it;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * The classpath a YARN cluster puts on its containers: Hadoop and its dependencies, taken from the
 * test's classpath without anything of {@code io.zooid} (the zooid jar, the example job, this
 * module), so that the tasks get zooid and the job only from the jars the job ships.
 */
final class ClusterClasspath {
    private ClusterClasspath() {}

    /** The entries of this JVM's classpath (a manifest-only jar's Class-Path expanded) minus zooid's. */
    static List<String> withoutZooid() throws IOException {
        Set<File> entries = new LinkedHashSet<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            expand(new File(entry).getAbsoluteFile(), entries);
        }
        List<String> classpath = new ArrayList<>();
        for (File entry : entries) {
            if (entry.exists() && !holdsZooid(entry) && !manifestOnly(entry)) {
                classpath.add(entry.getPath());
            }
        }
        return classpath;
    }

    /** Adds {@code entry} and, for a jar, the entries its manifest's Class-Path names. */
    private static void expand(File entry, Set<File> entries) throws IOException {
        if (!entries.add(entry) || !entry.isFile()) {
            return;
        }
        try (JarFile jar = new JarFile(entry)) {
            Manifest manifest = jar.getManifest();
            String classPath = manifest == null ? null : manifest.getMainAttributes().getValue(Attributes.Name.CLASS_PATH);
            if (classPath == null) {
                return;
            }
            for (String relative : classPath.trim().split("\\s+")) {
                try {
                    expand(new File(entry.toURI().resolve(new URI(relative))), entries);
                } catch (URISyntaxException | IllegalArgumentException e) {
                    throw new IOException("bad Class-Path entry " + relative + " in " + entry, e);
                }
            }
        }
    }

    /** A jar with no classes that only names others (surefire's class path jar): its entries are expanded. */
    private static boolean manifestOnly(File entry) throws IOException {
        if (!entry.isFile()) {
            return false;
        }
        try (JarFile jar = new JarFile(entry)) {
            Manifest manifest = jar.getManifest();
            return manifest != null && manifest.getMainAttributes().getValue(Attributes.Name.CLASS_PATH) != null
                    && jar.stream().noneMatch(e -> e.getName().endsWith(".class"));
        }
    }

    private static boolean holdsZooid(File entry) throws IOException {
        if (entry.isDirectory()) {
            return new File(entry, "io/zooid").isDirectory();
        }
        try (JarFile jar = new JarFile(entry)) {
            return jar.stream().anyMatch(e -> e.getName().startsWith("io/zooid/"));
        }
    }
}
