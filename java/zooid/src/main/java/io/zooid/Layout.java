package io.zooid;

/**
 * How a category keeps its IDs in ZooKeeper (the pool layout), chosen when it is created with
 * {@link CategorySpec#layout(Layout, long)} (or {@link CategorySpec#blocks(long)}, {@link
 * CategorySpec#singleNode()}); a spec that names none makes {@link #HOLE_NODES} on ZooKeeper and
 * {@link #SINGLE_NODE} on the embedded stores. Takes and pushes are the same calls
 * in every layout, and none hands an ID out twice.
 */
public enum Layout {
    /**
     * One node holds the free list (pool formats 1 and 2, readable by the seed's tools): every
     * take and push is a compare-and-set on it, and takes are exactly lowest first. The only
     * layout of the embedded stores.
     */
    SINGLE_NODE(1),
    /**
     * Hole nodes (pool format 4, ZooKeeper only): block allocation (fresh IDs claimed in blocks by
     * creates that never conflict) whose pushed ranges stay nodes of their own, claimed by
     * deleting them, so thousands of tasks that take a batch and push back their leftovers do not
     * conflict. The default on ZooKeeper. (Number 2 was block allocation in the retired pool
     * format 3.)
     */
    HOLE_NODES(3);

    /** The layout number the native library knows it by (C's {@code zooid_layout}). */
    final int number;

    Layout(int number) {
        this.number = number;
    }
}
