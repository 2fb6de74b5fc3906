package io.zooid;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A candidacy in the leader election of one group (a ZooKeeper node path), on the session of an
 * {@link IDGeneratorService}. Candidates queue in ZooKeeper's order; at most one leads, and each
 * waits on its immediate predecessor only.
 *
 * <pre>{@code
 * try (LeaderElection election = LeaderElection.join(service, "/app/leader", "worker-1")) {
 *     long token = election.awaitLeadership(1, TimeUnit.MINUTES);
 *     // Lead. Pass `token` to resources that refuse lower tokens, and write to ZooKeeper with
 *     // election.setData(...): it applies only while this candidate still leads.
 * }
 * }</pre>
 *
 * <p>States ({@link #getState()}): {@link LeaderState#ACTIVE} while leading on a connected
 * session, {@link LeaderState#PAUSED} while leading on a suspended one (see {@link PausePolicy}),
 * {@link LeaderState#INACTIVE} otherwise. After its session is lost, the candidate rejoins on the
 * next session by itself, unless it resigned. Every leadership term has a fencing token that
 * strictly increases from one leader to the next.
 *
 * <p>A {@link Listener} given to {@link #join(IDGeneratorService, String, String, byte[],
 * PausePolicy, Listener)} is called on a daemon Java thread that this object owns (named {@code
 * zooid-election-GROUP}), once per change, in order; a slow listener may miss intermediate
 * states, never the latest one. No native thread ever calls into Java.
 *
 * <p>Thread-safe. {@link #close()} is idempotent: it leaves the group (waiting for that, bounded
 * by the session timeout), stops the listener thread and frees the native candidacy; any later
 * call throws {@link IllegalStateException}. The candidacy keeps the service's session open until
 * it is closed, even when the service is closed first.
 */
public final class LeaderElection extends NativeResource implements AutoCloseable {
    /** Receives the state changes of a candidate. */
    public interface Listener {
        /**
         * The candidate's state changed.
         *
         * @param state the new state
         * @param fencingToken the leadership's token while {@link LeaderState#ACTIVE} or {@link
         *     LeaderState#PAUSED}, 0 while {@link LeaderState#INACTIVE}
         */
        void stateChanged(LeaderState state, long fencingToken);
    }

    /** What the listener's wait returns once the handle is freed. */
    private static final long[] FREED = new long[0];

    /** How long one native wait of the listener thread lasts. */
    private static final long LISTENER_WAIT_MILLIS = 1000;

    private final String group;
    private final String name;
    private final Thread listenerThread;

    private LeaderElection(long handle, String group, String name, Listener listener) {
        super(handle);
        this.group = group;
        this.name = name;
        if (listener == null) {
            this.listenerThread = null;
        } else {
            this.listenerThread = new Thread(() -> listen(listener), "zooid-election-" + group);
            this.listenerThread.setDaemon(true);
            this.listenerThread.start();
        }
    }

    /**
     * Joins the election of {@code group} as {@code name}, with no data, the {@link
     * PausePolicy#KEEP} policy and no listener.
     *
     * @see #join(IDGeneratorService, String, String, byte[], PausePolicy, Listener)
     */
    public static LeaderElection join(IDGeneratorService service, String group, String name)
            throws IDGeneratorException {
        return join(service, group, name, new byte[0], PausePolicy.KEEP, null);
    }

    /**
     * Joins the election of {@code group} (an absolute node path, created with its parents when
     * missing) on {@code service}'s ZooKeeper session. Returns once the group node exists; the
     * candidate node is created in the background and the state starts {@link
     * LeaderState#INACTIVE}.
     *
     * @param name the candidate's name shown to observers: non-empty, at most 256 UTF-8 bytes, no
     *     newline or NUL
     * @param data bytes shown to observers (at most 64 KiB), or null for none
     * @param onPause what a suspension of the session means for a leader
     * @param listener called with every state change on this object's own thread, or null
     * @throws IllegalArgumentException for a bad group or name, or a service on an embedded store
     *     ({@code mem:}, {@code file:}), which has no session
     * @throws TooLargeException if the name or data is too large
     * @throws ConnectionLostException if the group node could not be ensured
     * @throws IllegalStateException if the service is closed
     */
    public static LeaderElection join(
            IDGeneratorService service,
            String group,
            String name,
            byte[] data,
            PausePolicy onPause,
            Listener listener)
            throws IDGeneratorException {
        Objects.requireNonNull(service, "service");
        Objects.requireNonNull(group, "group");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(onPause, "onPause");
        byte[] bytes = data == null ? new byte[0] : data;
        long handle = service.withHandle(
                h -> ZooidNative.electionJoin(h, group, name, bytes, onPause == PausePolicy.STOP ? 1 : 0));
        try {
            return new LeaderElection(handle, group, name, listener);
        } catch (Throwable e) {
            // The listener's thread could not start ("unable to create native thread"): resign
            // and free the candidacy rather than leave it in line, leading with no owner.
            try {
                ZooidNative.electionResign(handle);
            } catch (IDGeneratorException resign) {
                e.addSuppressed(resign);
            } finally {
                ZooidNative.electionFree(handle);
            }
            throw e;
        }
    }

    /**
     * Who leads {@code group}, without joining it; empty when nobody does (or the group does not
     * exist).
     *
     * @throws IllegalArgumentException for a bad group path or an embedded store
     */
    public static Optional<LeaderInfo> leader(IDGeneratorService service, String group)
            throws IDGeneratorException {
        Objects.requireNonNull(service, "service");
        Objects.requireNonNull(group, "group");
        byte[] encoded = service.withHandle(h -> ZooidNative.electionLeader(h, group));
        return encoded == null ? Optional.empty() : Optional.of(LeaderInfo.decode(encoded));
    }

    /** The group node's path. */
    public String getGroup() {
        return group;
    }

    /** The candidate's name. */
    public String getName() {
        return name;
    }

    /** The current state (no I/O). */
    public LeaderState getState() {
        return LeaderState.fromValue(status()[0]);
    }

    /**
     * The fencing token of the current leadership while {@link LeaderState#ACTIVE} or {@link
     * LeaderState#PAUSED} (positive, strictly increasing from one leader to the next), 0 while
     * {@link LeaderState#INACTIVE}. No I/O.
     */
    public long getFencingToken() {
        return status()[1];
    }

    /**
     * How long the leadership's lease still runs: the quorum confirmed this leadership that
     * recently, so the servers cannot have expired the session and let another candidate lead
     * before it ends (docs/RECIPES.md gives the window and its clock assumption). {@link
     * Duration#ZERO} when not leading, not confirmed yet, or passed. A leader that acts only
     * while this is positive acts only within the quorum's latest confirmation. No I/O.
     */
    public Duration getLeaseRemaining() throws IDGeneratorException {
        return Duration.ofMillis(withHandle(ZooidNative::electionLeaseRemainingMillis));
    }

    /** How many times this candidate became leader. */
    public long getTerms() {
        return status()[3];
    }

    /**
     * Waits until this candidate is {@link LeaderState#ACTIVE} and returns its fencing token. The
     * wait is not interruptible; bound it with the timeout.
     *
     * @throws OperationTimeoutException if it does not lead within the timeout
     * @throws IllegalStateException if the candidacy ended (resigned, closed, session closed)
     */
    public long awaitLeadership(long timeout, TimeUnit unit) throws IDGeneratorException {
        Objects.requireNonNull(unit, "unit");
        long millis = Math.max(0, unit.toMillis(timeout));
        return withHandle(h -> ZooidNative.electionAwaitLeadership(h, millis));
    }

    /**
     * Sets {@code path}'s data only while this candidate leads: one ZooKeeper {@code multi} that
     * first checks the candidate's own node, so an ex-leader (whose session expired while it was
     * paused, for example) cannot write. There is no "any version" form: {@code expectedVersion}
     * is the node's data version (read it first), which also makes the write a compare-and-set.
     *
     * @return the node's new data version
     * @throws IllegalArgumentException if {@code expectedVersion < 0}
     * @throws NotLeaderException if this candidate does not lead; nothing was written
     * @throws IDGeneratorException (code {@code STORE}) if the node is missing or at another
     *     version (nothing was written), or the reply was lost (the message says the outcome is
     *     unknown)
     * @throws IllegalStateException after {@link #resign()} or {@link #close()}
     */
    public int setData(String path, byte[] data, int expectedVersion) throws IDGeneratorException {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(data, "data");
        requireVersion(expectedVersion);
        return withHandle(h -> ZooidNative.electionSetData(h, path, data, expectedVersion));
    }

    /**
     * Creates the persistent node {@code path} (its parent must exist) only while this candidate
     * leads; see {@link #setData}.
     */
    public void create(String path, byte[] data) throws IDGeneratorException {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(data, "data");
        withHandle(h -> {
            ZooidNative.electionCreate(h, path, data);
            return null;
        });
    }

    /** Deletes {@code path} at {@code expectedVersion} only while this candidate leads; see {@link #setData}. */
    public void delete(String path, int expectedVersion) throws IDGeneratorException {
        Objects.requireNonNull(path, "path");
        requireVersion(expectedVersion);
        withHandle(h -> {
            ZooidNative.electionDelete(h, path, expectedVersion);
            return null;
        });
    }

    /**
     * Leaves the group: ends the candidacy, deletes the candidate node and waits for that
     * (bounded by twice the session timeout). The state ends {@link LeaderState#INACTIVE}; fenced
     * writes and {@link #awaitLeadership} then throw {@link IllegalStateException}. Repeating it
     * is harmless; {@link #close()} is still needed to free the object.
     *
     * @throws IDGeneratorException with {@link ErrorCode#STORE} when the candidate node could not
     *     be deleted in time: it may still be there (heading the line, so nobody else leads) and
     *     is deleted in the background until it is gone or the session is; calling
     *     {@code resign()} again returns normally once it is gone
     */
    public void resign() throws IDGeneratorException {
        withHandle(h -> {
            ZooidNative.electionResign(h);
            return null;
        });
    }

    /**
     * Resigns (if not done yet), stops the listener thread (after its last call, with the final
     * {@link LeaderState#INACTIVE}) and frees the candidacy. Closing again does nothing.
     */
    @Override
    public void close() {
        closeOnce();
    }

    @Override
    void beforeFree(long handle) {
        try {
            ZooidNative.electionResign(handle);
        } catch (IDGeneratorException e) {
            // The node could not be deleted in time (STORE): it is still being deleted in the
            // background, after the free too, until it is gone or the session is.
        }
        if (listenerThread != null && listenerThread != Thread.currentThread()) {
            boolean interrupted = false;
            while (listenerThread.isAlive()) {
                try {
                    listenerThread.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    void free(long handle) {
        ZooidNative.electionFree(handle);
    }

    @Override
    String describe() {
        return "LeaderElection";
    }

    @Override
    public String toString() {
        return "LeaderElection[" + group + ", " + name + (isClosed() ? ", closed]" : "]");
    }

    private static void requireVersion(int expectedVersion) {
        if (expectedVersion < 0) {
            throw new IllegalArgumentException(
                    "expected version " + expectedVersion + ": give the node's data version (0 or more); there is no \"any version\"");
        }
    }

    private long[] status() {
        return withHandle(ZooidNative::electionStatus);
    }

    /**
     * The listener thread: waits natively for the next change (in bounded slices, holding the
     * read lock so the handle cannot be freed meanwhile) and reports it, until the candidacy is
     * closed.
     */
    private void listen(Listener listener) {
        long[] last = {LeaderState.INACTIVE.getValue(), 0, 0};
        while (true) {
            long[] seen = last;
            long[] next;
            try {
                next = untilFreed(h -> ZooidNative.electionWaitChange(
                        h, (int) seen[0], seen[1], (int) seen[2], LISTENER_WAIT_MILLIS), FREED);
            } catch (IDGeneratorException | RuntimeException e) {
                return;
            }
            if (next == FREED) {
                return;
            }
            if (next == null) {
                continue;
            }
            last = next;
            try {
                listener.stateChanged(LeaderState.fromValue(next[0]), next[1]);
            } catch (RuntimeException e) {
                // A listener's exception must not end the notifications; it is the listener's
                // to handle.
            }
            if (next[2] != 0) {
                return;
            }
        }
    }
}
