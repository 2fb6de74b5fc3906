package io.zooid;

import java.io.File;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;

/**
 * Child-JVM entry point for the loader tests: loads zooid (in this class loader, and with
 * argument {@code two-loaders} also in a second, isolated one), takes an ID from an in-memory
 * store, and prints how each library copy was loaded.
 */
public final class LoaderProbe {
    private LoaderProbe() {}

    public static void main(String[] args) throws Exception {
        System.out.println("probe 1: " + IDGeneratorService.nativeLibraryInfo());
        System.out.println("probe 1 load us " + IDGeneratorService.nativeLoadTime().toNanos() / 1000);
        System.out.println("probe 1 took " + takeOne(IDGeneratorService.class.getClassLoader()));
        if (args.length > 0 && args[0].equals("two-loaders")) {
            File classes = new File(System.getProperty("zooid.test.classes"));
            try (URLClassLoader isolated = new URLClassLoader(new URL[] {classes.toURI().toURL()}, null)) {
                Class<?> service = isolated.loadClass(IDGeneratorService.class.getName());
                System.out.println("probe 2: " + service.getMethod("nativeLibraryInfo").invoke(null));
                System.out.println("probe 2 took " + takeOne(isolated));
            }
        }
    }

    /** Opens mem:probe in the zooid classes of {@code loader}, creates /probe and takes one ID. */
    static long takeOne(ClassLoader loader) throws Exception {
        Class<?> serviceClass = loader.loadClass("io.zooid.IDGeneratorService");
        Class<?> categoryClass = loader.loadClass("io.zooid.IDCategory");
        Class<?> setClass = loader.loadClass("io.zooid.IDSet");
        Object category = categoryClass.getConstructor(String.class).newInstance("/probe");
        Object service = serviceClass.getMethod("open", String.class).invoke(null, "mem:probe");
        try {
            Class<?> specClass = loader.loadClass("io.zooid.CategorySpec");
            Object spec = specClass.getMethod("of", long.class, long.class).invoke(null, 1L, 100L);
            serviceClass.getMethod("createCategory", categoryClass, specClass).invoke(service, category, spec);
            Object ids = serviceClass.getMethod("takeIDs", categoryClass, int.class).invoke(service, category, 10);
            Method takeID = setClass.getMethod("takeID");
            return (Long) takeID.invoke(ids);
        } finally {
            serviceClass.getMethod("close").invoke(service);
        }
    }
}
