package io.zooid;

/**
 * The native methods, implemented in Rust ({@code src/java/} of the zooid crate) and bound with
 * {@code RegisterNatives} when the library loads. The class name is fixed in the native library:
 * do not relocate the {@code io.zooid} package when shading.
 *
 * <p>Handles are {@code IdGeneratorService} pointers; {@link IDGeneratorService} guarantees that
 * a handle is used only while open and closed exactly once. Ranges are {@code long[]} start/end
 * pairs.
 */
final class ZooidNative {
    static {
        NativeLoader.load();
    }

    private ZooidNative() {}

    /** Forces the library to load (and fail here, with its reason, if it cannot). */
    static void ensureLoaded() {
        // Running the static initializer is the whole point.
    }

    /** Opens a service; non-positive numbers and null strings mean the default. */
    static native long open(
            String connect,
            long sessionTimeoutMillis,
            String digestUser,
            String digestPassword,
            long operationTimeoutMillis,
            int maxAttempts,
            long maxPoolBytes)
            throws IDGeneratorException;

    static native void close(long handle);

    static native void createCategory(long handle, String category, long first, long last)
            throws IDGeneratorException;

    static native long[] takeIds(long handle, String category, int count) throws IDGeneratorException;

    static native void pushIds(long handle, String category, long[] ranges) throws IDGeneratorException;

    /** bounds start, bounds end, version, bytes, legacy (0/1), free count, free pairs... */
    static native long[] poolInfo(long handle, String category) throws IDGeneratorException;

    /** The version of the Rust crate the library was built from. */
    /** The service's statistics; layout in src/java/stats.rs. */
    static native long[] stats(long handle) throws IDGeneratorException;

    static native String version();

    /** Panics in Rust, to test that the panic becomes an exception (code PANIC). */
    static native void panicForTest() throws IDGeneratorException;

    /**
     * Takes up to {@code count} IDs with the Rust {@code IdSet::take_id} over {@code ranges};
     * returns elapsed nanoseconds, IDs taken, and their wrapping sum.
     */
    static native long[] benchTakeIds(long[] ranges, long count);
}
