package io.zooid;

import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * A distributed work queue in ZooKeeper: producers {@link #put} items, consumers {@link #claim}
 * them oldest first. While a consumer holds a {@link Claim}, no other consumer gets its item; the
 * consumer {@link Claim#complete() completes} it (the item is deleted, never handed out again) or
 * {@link Claim#release() releases} it (it is handed out again). A claim is tied to the ZooKeeper
 * session: if the process dies or is cut off past the session timeout, its claims vanish and the
 * items are handed out again, so delivery is at-least-once. Idle consumers wait in line, and only
 * the first one watches the queue: a put wakes one consumer, not all.
 *
 * <pre>{@code
 * try (IDGeneratorService service = IDGeneratorService.open("zk1:2181,zk2:2181,zk3:2181");
 *      WorkQueue jobs = WorkQueue.open(service, "/apps/jobs")) {
 *     jobs.put("resize 42.png".getBytes(StandardCharsets.UTF_8));
 *     try (WorkQueue.Claim claim = jobs.claim(30, TimeUnit.SECONDS)) {
 *         if (claim != null) {
 *             process(claim.getData());
 *             claim.complete();   // not reached if process() throws: close() releases the item
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>Thread-safe: share one queue between threads (a {@link Claim} belongs to the thread that
 * works on it). The queue uses the service's ZooKeeper session and keeps it open until the queue
 * and its claims are closed too. {@link #close()} is idempotent, waits for calls in progress
 * (a waiting {@link #claim} included), and any later call throws {@link IllegalStateException};
 * claims already made stay usable.
 */
public final class WorkQueue extends NativeResource implements AutoCloseable {
    private final String path;

    private WorkQueue(long handle, String path) {
        super(handle);
        this.path = path;
    }

    /** Opens the queue at {@code path} with default options. See {@link #open(IDGeneratorService, String, WorkQueueOptions)}. */
    public static WorkQueue open(IDGeneratorService service, String path) throws IDGeneratorException {
        return open(service, path, new WorkQueueOptions());
    }

    /**
     * Opens the queue at {@code path} (an absolute ZooKeeper path) on the ZooKeeper session of
     * {@code service}. Touches nothing on the servers: the first put creates the queue.
     *
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException for a bad path, or a service on an embedded store
     *     ({@code mem:}, {@code file:}), which has no ZooKeeper session
     * @throws IllegalStateException if the service is closed
     */
    public static WorkQueue open(IDGeneratorService service, String path, WorkQueueOptions options)
            throws IDGeneratorException {
        Objects.requireNonNull(service, "service");
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(options, "options");
        long handle = service.withHandle(h -> ZooidNative.queueOpen(h, path, options));
        try {
            return new WorkQueue(handle, path);
        } catch (Throwable e) {
            ZooidNative.queueClose(handle);
            throw e;
        }
    }

    /** The queue's path. */
    public String getPath() {
        return path;
    }

    /**
     * Adds an item holding {@code data} to the end of the queue, creating the queue if needed, and
     * returns the item's name. Exactly once: a put whose reply was lost is resolved, never
     * repeated.
     *
     * @throws TooLargeException if {@code data} is over the queue's item size limit; nothing was added
     * @throws QueueFullException if the queue holds its maximum number of items; nothing was added
     * @throws OperationTimeoutException if nothing was sent within the operation timeout, or this
     *     put's turn among concurrent puts on the handle did not come within it; nothing was added
     *     (a put returns within twice the timeout: its turn, then its requests)
     * @throws OutcomeUnknownException if a request of the put may have reached the servers and its
     *     fate could not be told within the operation timeout; the item may or may not have been
     *     added ({@link OutcomeUnknownException#getOperation()} is {@code "put"}, no IDs)
     */
    public String put(byte[] data) throws IDGeneratorException {
        Objects.requireNonNull(data, "data");
        return withHandle(h -> ZooidNative.queuePut(h, data));
    }

    /**
     * Claims the oldest unclaimed item, waiting up to {@code timeout} for one ({@code 0}: try once
     * without waiting). Returns null when none came in time. A queue that does not exist yet is
     * created and waited on like an empty one: consumers may start before producers. The wait is not
     * interruptible, but {@link #close()} from another thread ends it.
     *
     * @throws IllegalArgumentException if {@code timeout} is negative
     * @throws IllegalStateException if the queue is closed (also while waiting), or the session was
     *     closed while waiting
     */
    public Claim claim(long timeout, TimeUnit unit) throws IDGeneratorException {
        Objects.requireNonNull(unit, "unit");
        if (timeout < 0) {
            throw new IllegalArgumentException("claim timeout must not be negative, got " + timeout);
        }
        long millis = unit.toMillis(timeout);
        return withHandle(h -> {
            long claim = ZooidNative.queueClaim(h, millis);
            return claim == 0 ? null : Claim.wrap(claim, path);
        });
    }

    /**
     * Closes this handle on the queue (the queue and its items stay in ZooKeeper). A claim waiting
     * on another thread ends at once with {@link IllegalStateException} (a lock it made is
     * released); other calls in progress are waited for; later calls throw {@link
     * IllegalStateException}. Claims made through it stay usable. Closing again does nothing.
     */
    @Override
    public void close() {
        closeOnce();
    }

    @Override
    void beforeFree(long handle) {
        ZooidNative.queueStopClaims(handle);
    }

    @Override
    void free(long handle) {
        ZooidNative.queueClose(handle);
    }

    @Override
    String describe() {
        return "WorkQueue " + path;
    }

    @Override
    public String toString() {
        return "WorkQueue[" + path + (isClosed() ? ", closed]" : "]");
    }

    /**
     * An item claimed from a {@link WorkQueue}: no other consumer gets it while the claim lives.
     * Finish it with {@link #complete()} or {@link #release()}; {@link #close()} releases a claim
     * that is neither completed nor released, so use it in try-with-resources.
     *
     * <p>The item's name and data are read once when it is claimed and stay readable after the
     * claim is finished. Meant for one thread; finishing it from another thread (a {@link
     * #close()}, say) waits for a call in progress and is safe.
     */
    public static final class Claim extends NativeResource implements AutoCloseable {
        private final String queue;
        private final String item;
        private final long sequence;
        private final byte[] data;

        private Claim(long handle, String queue, String item, long sequence, byte[] data) {
            super(handle);
            this.queue = queue;
            this.item = item;
            this.sequence = sequence;
            this.data = data;
        }

        /**
         * The claim behind the native {@code handle}, which it takes over: either the returned
         * object owns the handle, or the handle is freed (the item released in the background)
         * and what was thrown is rethrown. Any failure counts, an {@link OutOfMemoryError} above
         * all: copying a 1 MB item, or allocating the claim object itself (its fields included)
         * in a full heap. Left unfreed, the handle would keep the item locked by no one while the
         * session lives. The catch allocates nothing.
         */
        static Claim wrap(long handle, String queue) throws IDGeneratorException {
            try {
                String item = ZooidNative.claimItem(handle);
                long sequence = ZooidNative.claimSequence(handle);
                byte[] data = ZooidNative.claimData(handle);
                return new Claim(handle, queue, item, sequence, data);
            } catch (Throwable e) {
                ZooidNative.claimFree(handle);
                throw e;
            }
        }

        /** The item's name in the queue (such as {@code i-3f2a...-0000000007}). */
        public String getItem() {
            return item;
        }

        /** The item's put order: ZooKeeper's sequence number, lower was put earlier. */
        public long getSequence() {
            return sequence;
        }

        /** The item's bytes (a copy: changing it changes nothing in the queue). */
        public byte[] getData() {
            return data.clone();
        }

        /**
         * Whether the claim is known to be lost with its ZooKeeper session, in which case another
         * consumer may get the item; {@code false} is no promise. {@code true} once finished.
         */
        public boolean isLost() {
            return untilFreed(ZooidNative::claimIsLost, true);
        }

        /** Whether the claim was completed, released or closed. */
        public boolean isFinished() {
            return isClosed();
        }

        /**
         * Completes the item: deletes it and its lock in one transaction that first checks the lock
         * is still this claim's. The item is never handed out again. The claim is finished either
         * way.
         *
         * @throws SessionLostException if the claim was lost with its session; nothing was done,
         *     and the item is or will be handed out again
         * @throws OperationTimeoutException if no server answered within the operation timeout
         *     (outcome unknown; while the session lives the complete goes on in the background
         *     until done)
         * @throws IllegalStateException if the claim is already finished
         */
        public void complete() throws IDGeneratorException {
            finish(h -> {
                ZooidNative.claimComplete(h);
                return null;
            });
        }

        /**
         * Releases the item: it is handed out again, keeping its place in the queue. The claim is
         * finished either way.
         *
         * @throws SessionLostException if the claim was lost with its session (its lock is gone
         *     already)
         * @throws OperationTimeoutException if no server answered within the operation timeout
         *     (while the session lives the release goes on in the background until done)
         * @throws IllegalStateException if the claim is already finished
         */
        public void release() throws IDGeneratorException {
            finish(h -> {
                ZooidNative.claimRelease(h);
                return null;
            });
        }

        /**
         * Releases the claim if it was neither completed nor released, in the background: returns
         * at once, and the item is handed out again as soon as ZooKeeper deleted the lock (or, if
         * that fails, when the session ends). Closing again does nothing.
         */
        @Override
        public void close() {
            closeOnce();
        }

        @Override
        void free(long handle) {
            ZooidNative.claimFree(handle);
        }

        @Override
        String describe() {
            return "the claim of item " + item + " of queue " + queue;
        }

        @Override
        public String toString() {
            return "WorkQueue.Claim[" + queue + "/" + item + (isFinished() ? ", finished]" : "]");
        }
    }
}
