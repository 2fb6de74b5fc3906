package io.zooid;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * Hands out unique IDs from categories kept in ZooKeeper.
 *
 * <p>Take IDs in batches with {@link #takeIDs}, use them one by one with {@link IDSet#takeID()}
 * (no I/O), and give back what is left with {@link #pushIDs}; pushed IDs are handed out again,
 * lowest first. Every change is a versioned compare-and-set, so no ID is ever handed out twice.
 *
 * <pre>{@code
 * IDCategory did = new IDCategory("/com/demdex/eventpublish/idgen/did");
 * try (IDGeneratorService service = IDGeneratorService.open("zk1:2181,zk2:2181,zk3:2181")) {
 *     IDSet ids = null;
 *     try {
 *         while (moreEvents()) {
 *             if (ids == null || !ids.hasMoreIDs()) {
 *                 ids = service.takeIDs(did, 10000);
 *             }
 *             publish(nextEvent(), ids.takeID());
 *         }
 *     } finally {
 *         if (ids != null && ids.hasMoreIDs()) {
 *             service.pushIDs(ids);
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>Thread-safe: share one service between threads (an {@link IDSet} belongs to one thread).
 * Each service holds one ZooKeeper session; close it when done. {@link #close()} is idempotent,
 * waits for calls in progress, and any later call throws {@link IllegalStateException}.
 */
public final class IDGeneratorService extends NativeResource implements AutoCloseable {
    private final String connect;
    /** The store the service's IDs come from ({@link ZooidNative#origin}), or null. */
    private final String origin;
    /** The MBean registered for this service, or null. */
    private volatile ObjectName mbeanName;

    private static final AtomicLong SERVICES = new AtomicLong();

    private IDGeneratorService(long handle, String connect) throws IDGeneratorException {
        super(handle);
        this.connect = connect;
        this.origin = ZooidNative.origin(handle);
    }

    /**
     * Opens a service with default options. See {@link #open(String, IDGeneratorOptions)}.
     */
    public static IDGeneratorService open(String connect) throws IDGeneratorException {
        return open(connect, new IDGeneratorOptions());
    }

    /**
     * Opens a service on the store {@code connect} names:
     *
     * <ul>
     *   <li>a ZooKeeper connect string, {@code host:port[,host:port...][/chroot]};
     *   <li>{@code mem:} or {@code mem:NAME}: an in-process store (a name shares one store within
     *       the library instance), for tests;
     *   <li>{@code file:DIR}: an embedded store in directory {@code DIR}, shared by the processes
     *       of one machine.
     * </ul>
     *
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code connect} is unusable
     * @throws ConnectionLostException if ZooKeeper cannot be reached in time
     * @throws IDGeneratorException if the store cannot be opened for another reason
     */
    public static IDGeneratorService open(String connect, IDGeneratorOptions options)
            throws IDGeneratorException {
        Objects.requireNonNull(connect, "connect");
        Objects.requireNonNull(options, "options");
        long handle = ZooidNative.open(connect, options);
        IDGeneratorService service;
        try {
            service = new IDGeneratorService(handle, connect);
        } catch (Throwable e) {
            // Not built (a full heap): the native service, and its session, are closed here.
            ZooidNative.close(handle);
            throw e;
        }
        if (options.jmxEnabled()) {
            String name = options.jmxName() != null
                    ? options.jmxName()
                    : connect + "#" + SERVICES.incrementAndGet();
            try {
                service.registerMBean(name);
            } catch (Throwable e) {
                service.close();
                throw e;
            }
        }
        return service;
    }

    /** The JMX name of this service's MBean, or null when it registered none. */
    public ObjectName getMBeanName() {
        return mbeanName;
    }

    private void registerMBean(String name) {
        try {
            ObjectName objectName = new ObjectName(
                    "io.zooid:type=IDGeneratorService,name=" + ObjectName.quote(name));
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            server.registerMBean(new MBean(this), objectName);
            mbeanName = objectName;
        } catch (InstanceAlreadyExistsException e) {
            throw new IllegalArgumentException(
                    "JMX name " + name + " is already registered; give another with IDGeneratorOptions.jmxName", e);
        } catch (JMException e) {
            throw new IllegalStateException("cannot register the zooid MBean " + name + ": " + e, e);
        }
    }

    private void unregisterMBean() {
        ObjectName name = mbeanName;
        if (name == null) {
            return;
        }
        mbeanName = null;
        try {
            ManagementFactory.getPlatformMBeanServer().unregisterMBean(name);
        } catch (JMException e) {
            // Already gone (someone unregistered it): nothing left to clean up.
        }
    }

    /**
     * What the service did since it was opened: takes, pushes, conflicts, retries, lost replies
     * and how they were resolved, latency, session losses.
     *
     * @throws IllegalStateException if the service is closed
     */
    public ServiceStats getStats() {
        try {
            return withHandle(h -> {
                ServiceStats stats = new ServiceStats();
                ZooidNative.stats(h, stats);
                return stats;
            });
        } catch (IDGeneratorException e) {
            throw new IllegalStateException("reading the statistics failed: " + e.getMessage(), e);
        }
    }

    /**
     * Creates the category {@code category} as {@code spec} says: its IDs, all free, in its
     * layout (the store's default unless it names one: {@link Layout#HOLE_NODES} in blocks of 1000
     * on ZooKeeper, {@link Layout#SINGLE_NODE} on the embedded stores or with an ACL), with its
     * ceiling and its ACL.
     *
     * @throws NullPointerException if {@code category} or {@code spec} is null
     * @throws IllegalArgumentException for a block layout on the embedded stores
     * @throws CategoryExistsException if the category exists already (it is never reset)
     * @throws IDGeneratorException with {@link ErrorCode#STORE} for an ACL on the embedded stores,
     *     which have no ACLs
     */
    public void createCategory(IDCategory category, CategorySpec spec) throws IDGeneratorException {
        Objects.requireNonNull(category, "category");
        Objects.requireNonNull(spec, "spec");
        withHandle(h -> {
            ZooidNative.createCategory(h, category.getName(), spec.getFirstID(), spec.getLastID(),
                    spec.layoutNumber(), spec.getBlockSize(), spec.nativeCeiling(), spec.aclText());
            return null;
        });
    }

    /**
     * Moves the existing category {@code category} to the block layout {@code layout} in place,
     * while other processes keep taking and pushing: a single-node pool (formats 1 and 2, or a
     * seed-style node) to {@link Layout#HOLE_NODES} (format 4), its free ranges becoming hole
     * nodes, in blocks of {@code unit} IDs. No ID is handed out twice and none is lost; a pool in
     * the layout asked for already is left alone. A pool in the retired format 3 is refused with
     * {@link ErrorCode#CORRUPT_POOL} and left as it is.
     *
     * @param unit IDs per block, 0 for the default (1000)
     * @return what was done
     * @throws NullPointerException if {@code category} or {@code layout} is null
     * @throws IllegalArgumentException if {@code unit} is not in {@code 0..2147483647}, for {@link
     *     Layout#SINGLE_NODE} (there is no way back), or an embedded store
     * @throws CategoryNotFoundException if the category does not exist
     */
    public Migration migrateCategory(IDCategory category, Layout layout, long unit) throws IDGeneratorException {
        Objects.requireNonNull(category, "category");
        Objects.requireNonNull(layout, "layout");
        checkUnit(unit);
        return withHandle(h -> new Migration(
                ZooidNative.migrateCategory(h, category.getName(), layout.number, unit)));
    }

    private static void checkUnit(long unit) {
        if (unit < 0 || unit > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("block size " + unit + ": need 0 (the default) to 2147483647");
        }
    }

    /**
     * Takes up to {@code numIDs} of the lowest free IDs of {@code category}: fewer when fewer
     * remain, or when a take that got some could not get the rest (its deadline passed,
     * ZooKeeper unreachable) with nothing in doubt.
     *
     * @throws IllegalArgumentException if {@code numIDs < 1}
     * @throws IDsExhaustedException if no free IDs remain
     * @throws CategoryNotFoundException if the category does not exist
     * @throws OutcomeUnknownException if the write's reply was lost; its IDs are leaked, never
     *     handed out
     * @throws ConnectionLostException if ZooKeeper was unreachable; nothing was taken
     * @throws ContentionException if conflicts outlasted the retry budget; nothing was taken
     * @throws OperationTimeoutException if the deadline passed; nothing was taken
     * @throws CorruptPoolException if the pool node is not a valid pool
     * @throws IDGeneratorException with code {@link ErrorCode#OTHER} if the IDs were taken but
     *     could not be handed to Java (no memory for their array): they were pushed back, or, if
     *     that failed, are leaked (counted in {@link ServiceStats#getIDsLeaked()}); the message
     *     says which
     */
    public IDSet takeIDs(IDCategory category, int numIDs) throws IDGeneratorException {
        Objects.requireNonNull(category, "category");
        if (numIDs < 1) {
            throw new IllegalArgumentException("take of " + numIDs + " IDs: ask for at least 1");
        }
        return withHandle(h -> new IDSet(category, ZooidNative.takeIds(h, category.getName(), numIDs), origin));
    }

    /**
     * Returns the unused IDs of {@code ids} to their category, to be handed out again, and empties
     * {@code ids}: the push consumes it. Pushes nothing when {@code ids} is used up (and consumes
     * it too).
     *
     * <p>The set is held for the whole push: another thread's {@link IDSet#takeID()} waits, then
     * finds it empty. When the push fails having written nothing, {@code ids} keeps its IDs (the
     * push may be retried), whatever was thrown (also an {@link OutOfMemoryError} while the
     * exception was built). When it may have written (an {@link OutcomeUnknownException}, a panic
     * in the native library), the push is not repeated and {@code ids} is emptied and consumed
     * (its IDs may or may not be free again; they are never handed out twice).
     *
     * @throws IllegalStateException if {@code ids} was already pushed back (nothing is pushed
     *     again), or the service is closed
     * @throws IllegalArgumentException if {@code ids} was taken through a service on another store
     *     (another ensemble or chroot, directory or memory store; nothing is pushed, the set keeps
     *     its IDs)
     * @throws IDsOutOfBoundsException if an ID lies outside the category's bounds
     * @throws IDsAlreadyFreeException if an ID is already free (a double push)
     * @throws PoolFullException if the pool would grow past its size limit
     */
    public void pushIDs(IDSet ids) throws IDGeneratorException {
        Objects.requireNonNull(ids, "ids");
        withHandle(h -> {
            ids.push((ranges, kept) ->
                    ZooidNative.pushIds(h, ids.getCategory().getName(), ids.origin(), ranges, kept));
            return null;
        });
    }

    /**
     * Reads {@code category}'s pool node afresh: its bounds, free ranges and version.
     *
     * @throws CategoryNotFoundException if the category does not exist
     * @throws CorruptPoolException if the pool node is not a valid pool
     */
    public PoolInfo getPoolInfo(IDCategory category) throws IDGeneratorException {
        Objects.requireNonNull(category, "category");
        return withHandle(h -> new PoolInfo(category, ZooidNative.poolInfo(h, category.getName())));
    }

    /**
     * Opens the CAS counter at node {@code path} on this service's ZooKeeper session, following
     * this service's retry options. The node need not exist yet ({@link Counter#init(long)}).
     * Close the counter when done; it keeps the session open until then.
     *
     * @throws IllegalArgumentException if {@code path} is not a valid category path ({@link
     *     IDCategory}: its values are named by it), or the
     *     service runs on an embedded store ({@code mem:}, {@code file:}), which has no session
     */
    public Counter counter(String path) throws IDGeneratorException {
        Objects.requireNonNull(path, "path");
        // Its values are IDRanges of a category named by the path: checked before the native open.
        IDCategory values = new IDCategory(path);
        return withHandle(h -> {
            long counter = ZooidNative.counterOpen(h, path);
            try {
                return new Counter(counter, values);
            } catch (Throwable e) {
                ZooidNative.counterClose(counter);
                throw e;
            }
        });
    }

    /**
     * Opens a prefetching {@link IDSource} over {@code category} with default options, taking its
     * first batch now.
     *
     * @throws CategoryNotFoundException if the category does not exist
     * @throws IDsExhaustedException if no free IDs remain
     */
    public IDSource openSource(IDCategory category) throws IDGeneratorException {
        return openSource(category, new IDSourceOptions());
    }

    /**
     * Opens a prefetching {@link IDSource} over {@code category}, taking its first batch now. The
     * source shares this service's session and keeps it open until the source is closed.
     *
     * @throws CategoryNotFoundException if the category does not exist
     * @throws IDsExhaustedException if no free IDs remain
     */
    public IDSource openSource(IDCategory category, IDSourceOptions options) throws IDGeneratorException {
        Objects.requireNonNull(category, "category");
        Objects.requireNonNull(options, "options");
        return withHandle(h -> {
            long source = ZooidNative.sourceOpen(h, category.getName(), options);
            try {
                return new IDSource(source, category, options);
            } catch (Throwable e) {
                // Not built (a full heap): freed here, which gives its IDs back.
                ZooidNative.sourceFree(source);
                throw e;
            }
        });
    }

    /**
     * Closes the ZooKeeper session. Waits for calls in progress on other threads to finish;
     * later calls throw {@link IllegalStateException}. Closing again does nothing. A
     * {@link WorkQueue} opened on this service shares its session, which stays open until the
     * queue and its claims are closed too.
     */
    @Override
    public void close() {
        closeOnce();
    }

    @Override
    void beforeFree(long handle) {
        unregisterMBean();
    }

    @Override
    void free(long handle) {
        ZooidNative.close(handle);
    }

    @Override
    String describe() {
        return "IDGeneratorService";
    }

    /** The version of the native library, and where it was loaded from. */
    public static String nativeLibraryInfo() {
        ZooidNative.ensureLoaded();
        return "zooid " + ZooidNative.version() + " (" + NativeLoader.loadedFrom() + ")";
    }

    /**
     * How long loading the native library took in this class loader: finding it, extracting it
     * from the jar or checking the cached copy, and {@code System.load}. Loads it first if it is
     * not loaded yet; the figure is that of the one load, however often it is asked for.
     */
    public static Duration nativeLoadTime() {
        ZooidNative.ensureLoaded();
        return Duration.ofNanos(NativeLoader.loadNanos());
    }

    @Override
    public String toString() {
        return "IDGeneratorService[" + connect + (isClosed() ? ", closed]" : "]");
    }

    /** The MXBean of one service; every attribute reads the live statistics. */
    private static final class MBean implements IDGeneratorServiceMXBean {
        private final IDGeneratorService service;

        MBean(IDGeneratorService service) {
            this.service = service;
        }

        private ServiceStats stats() {
            return service.getStats();
        }

        @Override public String getConnectString() { return service.connect; }
        @Override public long getTakes() { return stats().getTakes(); }
        @Override public long getPushes() { return stats().getPushes(); }
        @Override public long getIDsTaken() { return stats().getIDsTaken(); }
        @Override public long getIDsPushed() { return stats().getIDsPushed(); }
        @Override public long getFailedOperations() { return stats().getFailedOperations(); }
        @Override public long getVersionConflicts() { return stats().getVersionConflicts(); }
        @Override public long getRetries() { return stats().getRetries(); }
        @Override public long getLostReplies() { return stats().getLostReplies(); }
        @Override public long getLostRepliesApplied() { return stats().getLostRepliesApplied(); }
        @Override public long getLostRepliesNotApplied() { return stats().getLostRepliesNotApplied(); }
        @Override public long getLostRepliesUnknown() { return stats().getLostRepliesUnknown(); }
        @Override public long getIDsLeaked() { return stats().getIDsLeaked(); }
        @Override public long getSessionLosses() { return stats().getSessionLosses(); }
        @Override public long getSessionGeneration() { return stats().getSessionGeneration(); }
        @Override public long getLatencyCount() { return stats().getLatencyCount(); }
        @Override public long getLatencyMaxMicros() { return stats().getLatencyMaxMicros(); }

        @Override
        public double getLatencyMeanMicros() {
            ServiceStats s = stats();
            return s.getLatencyCount() == 0 ? 0.0 : (double) s.getLatencySumMicros() / s.getLatencyCount();
        }
    }
}
