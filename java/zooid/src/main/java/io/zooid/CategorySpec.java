package io.zooid;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * What a new category is made of, the one argument of {@link
 * IDGeneratorService#createCategory(IDCategory, CategorySpec)} besides its path: its bounds
 * {@code firstID..lastID}, its pool {@link Layout}, an optional ceiling (the durable reservation's
 * bound) and an optional ZooKeeper ACL on its pool node.
 *
 * <p>Immutable: each method returns a new spec with one field changed, checked at once, so a spec
 * is always valid (what the store supports is known only when creating).
 *
 * <pre>{@code
 * service.createCategory(did, CategorySpec.of(1, 123456789));               // the store's default
 * service.createCategory(jobs, CategorySpec.of(1, Long.MAX_VALUE / 2).blocks(500).ceiling(0));
 * service.createCategory(own, CategorySpec.of(1, 1000).acl(Arrays.asList(ZooKeeperAcl.creator("cdrwa"))));
 * }</pre>
 */
public final class CategorySpec {
    /** The largest block size (one take's limit). */
    static final long MAX_BLOCK_SIZE = Integer.MAX_VALUE;
    /** The native library's "no ceiling". */
    private static final long NO_CEILING = -1;

    private final long firstID;
    private final long lastID;
    /** Null: the store's default. */
    private final Layout layout;
    /** IDs per block for the block layout; 0: the default (1000). */
    private final long blockSize;
    private final long ceiling;
    /** Null: the session's default ACL. */
    private final List<ZooKeeperAcl> acl;

    private CategorySpec(long firstID, long lastID, Layout layout, long blockSize, long ceiling,
            List<ZooKeeperAcl> acl) {
        this.firstID = firstID;
        this.lastID = lastID;
        this.layout = layout;
        this.blockSize = blockSize;
        this.ceiling = ceiling;
        this.acl = acl;
    }

    /**
     * A category whose IDs are {@code firstID..lastID} (inclusive), all free, in the store's
     * default layout ({@link Layout#HOLE_NODES} in blocks of 1000 on ZooKeeper, {@link
     * Layout#SINGLE_NODE} on the embedded stores), without a ceiling, with the session's default
     * ACL.
     *
     * @throws IllegalArgumentException unless {@code 1 <= firstID <= lastID}
     */
    public static CategorySpec of(long firstID, long lastID) {
        if (firstID < 1 || firstID > lastID) {
            throw new IllegalArgumentException(
                    "category bounds " + firstID + ".." + lastID + ": need 1 <= first <= last");
        }
        return new CategorySpec(firstID, lastID, null, 0, NO_CEILING, null);
    }

    /**
     * Block allocation with hole nodes ({@link Layout#HOLE_NODES}, pool format 4, ZooKeeper only)
     * in blocks of {@code blockSize} IDs: fresh IDs are claimed by creates that never conflict and
     * pushed ranges stay nodes of their own, so thousands of tasks taking at once do not conflict.
     * Use the batch size the tasks take.
     *
     * @throws IllegalArgumentException unless {@code 1 <= blockSize <= 2147483647}, or if the spec
     *     has an ACL
     */
    public CategorySpec blocks(long blockSize) {
        if (blockSize < 1 || blockSize > MAX_BLOCK_SIZE) {
            throw new IllegalArgumentException("block size " + blockSize + ": need 1..2147483647");
        }
        return layout(Layout.HOLE_NODES, blockSize);
    }

    /**
     * One node holding the free list ({@link Layout#SINGLE_NODE}): every take and push is a
     * compare-and-set on it, and takes are exactly lowest first.
     */
    public CategorySpec singleNode() {
        return layout(Layout.SINGLE_NODE, 0);
    }

    /**
     * Any layout, in blocks of {@code blockSize} IDs for the block layout ({@link
     * Layout#HOLE_NODES}, pool format 4; as {@link #blocks(long)}).
     *
     * @param blockSize IDs per block, 0 for the default (1000); ignored for {@link
     *     Layout#SINGLE_NODE}
     * @throws NullPointerException if {@code layout} is null
     * @throws IllegalArgumentException unless {@code 0 <= blockSize <= 2147483647}, or for a block
     *     layout when the spec has an ACL
     */
    public CategorySpec layout(Layout layout, long blockSize) {
        Objects.requireNonNull(layout, "layout");
        if (blockSize < 0 || blockSize > MAX_BLOCK_SIZE) {
            throw new IllegalArgumentException(
                    "block size " + blockSize + ": need 0 (the default) to 2147483647");
        }
        if (acl != null && layout != Layout.SINGLE_NODE) {
            throw aclNeedsSingleNode();
        }
        long unit = layout == Layout.SINGLE_NODE ? 0 : blockSize;
        return new CategorySpec(firstID, lastID, layout, unit, ceiling, acl);
    }

    /**
     * The ceiling of the durable reservation: no ID above it is handed out until it is raised (by
     * a keeper), so the keeper's first durable record covers every ID from the start.
     *
     * @throws IllegalArgumentException unless {@code 0 <= ceiling <= lastID}
     */
    public CategorySpec ceiling(long ceiling) {
        if (ceiling < 0 || ceiling > lastID) {
            throw new IllegalArgumentException(
                    "ceiling " + ceiling + ": need 0 <= ceiling <= last (" + lastID + ")");
        }
        return new CategorySpec(firstID, lastID, layout, blockSize, ceiling, acl);
    }

    /**
     * The ZooKeeper ACL of the pool node (ZooKeeper only; a category with an ACL is a single node).
     * Services the ACL does not grant read and write get {@link NotAuthorizedException} on takes
     * and pushes, and nothing changes. Creating it on an embedded store fails with {@link
     * ErrorCode#STORE}.
     *
     * @param acl the entries, at least one (see {@link ZooKeeperAcl}); copied
     * @throws NullPointerException if {@code acl} or an entry is null
     * @throws IllegalArgumentException if {@code acl} is empty, or a block layout is set
     */
    public CategorySpec acl(List<ZooKeeperAcl> acl) {
        Objects.requireNonNull(acl, "acl");
        if (acl.isEmpty()) {
            throw new IllegalArgumentException("acl: an empty ACL would make the node unusable");
        }
        List<ZooKeeperAcl> copy = new ArrayList<>(acl.size());
        for (ZooKeeperAcl entry : acl) {
            copy.add(Objects.requireNonNull(entry, "acl entry"));
        }
        if (layout != null && layout != Layout.SINGLE_NODE) {
            throw aclNeedsSingleNode();
        }
        return new CategorySpec(firstID, lastID, layout, blockSize, ceiling,
                Collections.unmodifiableList(copy));
    }

    private static IllegalArgumentException aclNeedsSingleNode() {
        return new IllegalArgumentException("acl: a category with its own ACL needs the single-node "
                + "layout (the nodes of the block layout get the session's default ACL)");
    }

    /** The first ID. */
    public long getFirstID() {
        return firstID;
    }

    /** The last ID. */
    public long getLastID() {
        return lastID;
    }

    /** The layout asked for; null for the store's default. */
    public Layout getLayout() {
        return layout;
    }

    /** IDs per block for a block layout; 0 for the default (1000) or no block layout. */
    public long getBlockSize() {
        return blockSize;
    }

    /** The ceiling, if any. */
    public OptionalLong getCeiling() {
        return ceiling == NO_CEILING ? OptionalLong.empty() : OptionalLong.of(ceiling);
    }

    /** The ACL entries, or null for the session's default. */
    public List<ZooKeeperAcl> getAcl() {
        return acl;
    }

    /** The layout number for the native library: 0 for the store's default. */
    int layoutNumber() {
        return layout == null ? 0 : layout.number;
    }

    /** The ceiling for the native library: -1 for none. */
    long nativeCeiling() {
        return ceiling;
    }

    /** The ACL as the native library parses it ({@code scheme:id:perms,...}), or null. */
    String aclText() {
        if (acl == null) {
            return null;
        }
        StringBuilder text = new StringBuilder();
        for (ZooKeeperAcl entry : acl) {
            if (text.length() > 0) {
                text.append(',');
            }
            text.append(entry);
        }
        return text.toString();
    }

    @Override
    public String toString() {
        return "CategorySpec[" + firstID + ".." + lastID
                + (layout == null ? "" : ", " + layout + (blockSize > 0 ? " " + blockSize : ""))
                + (ceiling == NO_CEILING ? "" : ", ceiling " + ceiling)
                + (acl == null ? "" : ", acl " + aclText()) + "]";
    }
}
