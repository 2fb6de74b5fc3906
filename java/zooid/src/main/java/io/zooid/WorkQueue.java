package io.zooid;

import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

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
public final class WorkQueue implements AutoCloseable {
    private final long handle;
    private final String path;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Calls hold the read lock; {@link #close()} takes the write lock to free the handle. */
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

    private WorkQueue(long handle, String path) {
        this.handle = handle;
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
        long handle = service.withHandle(h -> ZooidNative.queueOpen(
                h,
                path,
                options.maxItems(),
                options.maxItemBytes(),
                options.operationTimeoutMillis(),
                options.identity()));
        return new WorkQueue(handle, path);
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
     * @throws OperationTimeoutException if no server answered within the operation timeout; the
     *     item may or may not have been added
     */
    public String put(byte[] data) throws IDGeneratorException {
        Objects.requireNonNull(data, "data");
        return withHandle(h -> ZooidNative.queuePut(h, data));
    }

    /**
     * Claims the oldest unclaimed item, waiting up to {@code timeout} for one ({@code 0}: try once
     * without waiting). Returns null when none came in time. The wait is not interruptible; use a
     * bounded timeout.
     *
     * @throws IllegalArgumentException if {@code timeout} is negative
     * @throws CategoryNotFoundException if the queue does not exist (it is created by its first
     *     put); {@link CategoryNotFoundException#getCategory()} names it
     * @throws IllegalStateException if the queue is closed, or the session was closed while waiting
     */
    public Claim claim(long timeout, TimeUnit unit) throws IDGeneratorException {
        Objects.requireNonNull(unit, "unit");
        if (timeout < 0) {
            throw new IllegalArgumentException("claim timeout must not be negative, got " + timeout);
        }
        long millis = unit.toMillis(timeout);
        return withHandle(h -> {
            long claim = ZooidNative.queueClaim(h, millis);
            return claim == 0 ? null : new Claim(claim, path);
        });
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Closes this handle on the queue (the queue and its items stay in ZooKeeper). Waits for calls
     * in progress on other threads; later calls throw {@link IllegalStateException}. Claims made
     * through it stay usable. Closing again does nothing.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        Lock exclusive = lock.writeLock();
        exclusive.lock();
        try {
            ZooidNative.queueClose(handle);
        } finally {
            exclusive.unlock();
        }
    }

    @Override
    public String toString() {
        return "WorkQueue[" + path + (closed.get() ? ", closed]" : "]");
    }

    private <T> T withHandle(IDGeneratorService.HandleCall<T> call) throws IDGeneratorException {
        Lock shared = lock.readLock();
        shared.lock();
        try {
            if (closed.get()) {
                throw new IllegalStateException("WorkQueue " + path + " is closed");
            }
            return call.call(handle);
        } finally {
            shared.unlock();
        }
    }

    /**
     * An item claimed from a {@link WorkQueue}: no other consumer gets it while the claim lives.
     * Finish it with {@link #complete()} or {@link #release()}; {@link #close()} releases a claim
     * that is neither completed nor released, so use it in try-with-resources.
     *
     * <p>The item's name and data are read once when it is claimed and stay readable after the
     * claim is finished. Meant for one thread; calls that touch the claim are synchronized, so a
     * {@link #close()} from another thread is safe.
     */
    public static final class Claim implements AutoCloseable {
        private final String queue;
        private final String item;
        private final long sequence;
        private final byte[] data;
        /** The native claim; 0 once finished (completed, released or closed). Guarded by this. */
        private long handle;

        Claim(long handle, String queue) throws IDGeneratorException {
            this.handle = handle;
            this.queue = queue;
            try {
                this.item = ZooidNative.claimItem(handle);
                this.sequence = ZooidNative.claimSequence(handle);
                this.data = ZooidNative.claimData(handle);
            } catch (RuntimeException | IDGeneratorException e) {
                ZooidNative.claimFree(handle);
                this.handle = 0;
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
        public synchronized boolean isLost() {
            return handle == 0 || ZooidNative.claimIsLost(handle);
        }

        /** Whether the claim was completed, released or closed. */
        public synchronized boolean isFinished() {
            return handle == 0;
        }

        /**
         * Completes the item: deletes it and its lock in one transaction that first checks the lock
         * is still this claim's. The item is never handed out again. The claim is finished either
         * way.
         *
         * @throws SessionLostException if the claim was lost with its session; nothing was done,
         *     and the item is or will be handed out again
         * @throws OperationTimeoutException if no server answered within the operation timeout
         *     (outcome unknown)
         * @throws IllegalStateException if the claim is already finished
         */
        public synchronized void complete() throws IDGeneratorException {
            ZooidNative.claimComplete(finish());
        }

        /**
         * Releases the item: it is handed out again, keeping its place in the queue. The claim is
         * finished either way.
         *
         * @throws SessionLostException if the claim was lost with its session (its lock is gone
         *     already)
         * @throws IllegalStateException if the claim is already finished
         */
        public synchronized void release() throws IDGeneratorException {
            ZooidNative.claimRelease(finish());
        }

        /**
         * Releases the claim if it was neither completed nor released, in the background: returns
         * at once, and the item is handed out again as soon as ZooKeeper deleted the lock (or, if
         * that fails, when the session ends). Closing again does nothing.
         */
        @Override
        public synchronized void close() {
            if (handle != 0) {
                long h = handle;
                handle = 0;
                ZooidNative.claimFree(h);
            }
        }

        private long finish() {
            if (handle == 0) {
                throw new IllegalStateException(
                        "the claim of item " + item + " of queue " + queue + " is already finished");
            }
            long h = handle;
            handle = 0;
            return h;
        }

        @Override
        public synchronized String toString() {
            return "WorkQueue.Claim[" + queue + "/" + item + (handle == 0 ? ", finished]" : "]");
        }
    }
}
