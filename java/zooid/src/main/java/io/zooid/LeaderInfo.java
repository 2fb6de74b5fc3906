package io.zooid;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** Who leads a group, as an observer sees it ({@link LeaderElection#leader}). Immutable. */
public final class LeaderInfo {
    private final String name;
    private final byte[] data;
    private final long fencingToken;
    private final String node;

    private LeaderInfo(String name, byte[] data, long fencingToken, String node) {
        this.name = name;
        this.data = data;
        this.fencingToken = fencingToken;
        this.node = node;
    }

    /** Decodes the native layout: token, name, node (4-byte lengths), then the data. */
    static LeaderInfo decode(byte[] bytes) {
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        long token = buffer.getLong();
        String name = text(buffer);
        String node = text(buffer);
        byte[] data = new byte[buffer.remaining()];
        buffer.get(data);
        return new LeaderInfo(name, data, token, node);
    }

    private static String text(ByteBuffer buffer) {
        byte[] utf8 = new byte[buffer.getInt()];
        buffer.get(utf8);
        return new String(utf8, StandardCharsets.UTF_8);
    }

    /** The leader's candidate name. */
    public String getName() {
        return name;
    }

    /** A copy of the leader's candidate data. */
    public byte[] getData() {
        return Arrays.copyOf(data, data.length);
    }

    /** The leader's fencing token (the group's epoch << 31 | its candidate's sequence number). */
    public long getFencingToken() {
        return fencingToken;
    }

    /** The leader's candidate node path. */
    public String getNode() {
        return node;
    }

    @Override
    public String toString() {
        return "LeaderInfo[" + name + ", token " + fencingToken + ", " + node + "]";
    }
}
