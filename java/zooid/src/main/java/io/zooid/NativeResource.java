package io.zooid;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * An object backed by a native handle, the one idiom every handle class of this package follows
 * ({@link IDGeneratorService}, {@link Counter}, {@link WorkQueue}, {@link WorkQueue.Claim},
 * {@link LeaderElection}, {@link IDSource}).
 *
 * <ul>
 *   <li>The handle is final and freed exactly once: the first {@link #closeOnce()} (or {@link
 *       #finish}) wins a compare-and-set, later ones do nothing.
 *   <li>Calls use the handle under the read lock ({@link #withHandle}); freeing takes the write
 *       lock, so it waits for calls in flight and no call ever sees a freed handle.
 *   <li>Use after close throws {@link IllegalStateException}. No finalizers.
 * </ul>
 */
abstract class NativeResource {
    /** A call that uses the native handle; {@code E} is what it throws (inferred). */
    interface HandleCall<T, E extends Exception> {
        T call(long handle) throws E;
    }

    private final long handle;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Set under the write lock once the handle is freed. */
    private boolean freed;
    /** Calls hold the read lock; freeing the handle takes the write lock. */
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

    NativeResource(long handle) {
        this.handle = handle;
    }

    /** Frees the native handle; called once, under the write lock. */
    abstract void free(long handle);

    /** What {@link IllegalStateException} messages call this object once it is closed. */
    abstract String describe();

    /**
     * Runs after close began and before the handle is freed, on the closing thread, with no lock
     * held: a last native call (such as resigning) or Java-side clean-up. The handle is still live.
     */
    void beforeFree(long handle) {}

    /** The native handle, for the library's own tests. */
    final long handleForTest() {
        return handle;
    }

    /** Whether closing began. */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Makes {@code call} on the handle under the read lock, so that it cannot be freed meanwhile.
     *
     * @throws IllegalStateException once closing began
     */
    final <T, E extends Exception> T withHandle(HandleCall<T, E> call) throws E {
        Lock shared = lock.readLock();
        shared.lock();
        try {
            if (closed.get()) {
                throw new IllegalStateException(describe() + " is closed");
            }
            return call.call(handle);
        } finally {
            shared.unlock();
        }
    }

    /**
     * Like {@link #withHandle} but also while closing, until the handle is freed; then returns
     * {@code whenFreed}. For the object's own threads, which must follow it to the end.
     */
    final <T, E extends Exception> T untilFreed(HandleCall<T, E> call, T whenFreed) throws E {
        Lock shared = lock.readLock();
        shared.lock();
        try {
            return freed ? whenFreed : call.call(handle);
        } finally {
            shared.unlock();
        }
    }

    /**
     * Closes once: {@link #beforeFree}, then {@link #free} under the write lock (also when
     * {@code beforeFree} threw). Returns whether this call closed it (false when it was closed
     * already).
     */
    final boolean closeOnce() {
        if (!closed.compareAndSet(false, true)) {
            return false;
        }
        try {
            beforeFree(handle);
        } finally {
            // Also when beforeFree threw (a full heap, a JMX failure): the handle is freed, as
            // the close cannot be retried.
            Lock exclusive = lock.writeLock();
            exclusive.lock();
            try {
                freed = true;
                free(handle);
            } finally {
                exclusive.unlock();
            }
        }
        return true;
    }

    /**
     * Closes with {@code last}, a native call that consumes (frees) the handle, such as completing
     * a claim; {@link #free} is not called.
     *
     * @throws IllegalStateException if it was closed already
     */
    final <T, E extends Exception> T finish(HandleCall<T, E> last) throws E {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException(describe() + " is closed");
        }
        Lock exclusive = lock.writeLock();
        exclusive.lock();
        try {
            freed = true;
            return last.call(handle);
        } finally {
            exclusive.unlock();
        }
    }
}
