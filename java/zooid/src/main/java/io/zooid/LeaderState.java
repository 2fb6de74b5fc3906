package io.zooid;

/** Whether a {@link LeaderElection} candidate leads, from its own point of view. */
public enum LeaderState {
    /** Not leading: waiting in line, session lost, resigned or closed. */
    INACTIVE(0),
    /** Leading, with a connected ZooKeeper session. */
    ACTIVE(1),
    /**
     * Led when the session was suspended (disconnected); the session may still be alive. What
     * follows depends on the {@link PausePolicy}.
     */
    PAUSED(2);

    private final int value;

    LeaderState(int value) {
        this.value = value;
    }

    /** The stable number of the state (the C API's {@code zooid_leader_state}). */
    public int getValue() {
        return value;
    }

    static LeaderState fromValue(long value) {
        for (LeaderState state : values()) {
            if (state.value == value) {
                return state;
            }
        }
        throw new IllegalStateException("unknown leader state " + value);
    }
}
