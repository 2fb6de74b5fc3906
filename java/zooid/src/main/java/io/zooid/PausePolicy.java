package io.zooid;

/** What a {@link LeaderElection} leader does when its ZooKeeper session is suspended. */
public enum PausePolicy {
    /**
     * Keep leading through a suspension (at least one leader): {@link LeaderState#PAUSED}, then
     * {@link LeaderState#ACTIVE} again with the same token when the same session reconnects;
     * {@link LeaderState#INACTIVE} only once the session is lost.
     */
    KEEP,
    /**
     * A suspension ends the leadership (at most one leader): {@link LeaderState#PAUSED}, with
     * fenced writes refused, then {@link LeaderState#INACTIVE} on reconnection; the candidate
     * rejoins at the back of the line.
     */
    STOP
}
