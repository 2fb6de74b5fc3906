package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.junit.jupiter.api.Test;

/** IDSet, IDRange and IDCategory on their own: no native code involved. */
class IDSetTest {
    private static final IDCategory CAT = new IDCategory("/c");

    @Test
    void takeIdWalksEveryRangeInOrderThenStops() {
        IDSet set = new IDSet(CAT, new long[] {1, 2, 5, 5, Long.MAX_VALUE - 1, Long.MAX_VALUE});
        assertEquals(5, set.countIDs());
        assertEquals(1, set.takeID());
        assertEquals("/c [2:2 5:5 9223372036854775806:9223372036854775807]", set.toString());
        List<Long> rest = new ArrayList<>();
        while (set.hasMoreIDs()) {
            rest.add(set.takeID());
        }
        assertEquals(java.util.Arrays.asList(2L, 5L, Long.MAX_VALUE - 1, Long.MAX_VALUE), rest);
        assertEquals(0, set.countIDs());
        assertFalse(set.getRanges().hasNext());
        assertThrows(NoSuchElementException.class, set::takeID);
    }

    @Test
    void getRangesReturnsTheUnusedIdsAsCopies() {
        IDSet set = new IDSet(CAT, new long[] {10, 19, 30, 39});
        for (int i = 0; i < 12; i++) {
            set.takeID();
        }
        Iterator<IDRange> ranges = set.getRanges();
        IDRange first = ranges.next();
        assertEquals(32, first.getStartID());
        assertEquals(39, first.getEndID());
        assertEquals(CAT, first.getCategory());
        assertFalse(ranges.hasNext());
        assertEquals(32, first.takeID());
        assertEquals(7, first.countIDs());
        assertEquals(8, set.countIDs(), "taking from a copy leaves the set alone");
        assertEquals(32, set.takeID());
        assertThrows(UnsupportedOperationException.class, () -> set.getRanges().remove());
    }

    @Test
    void emptySetAndPush() throws Exception {
        IDSet empty = new IDSet(CAT, new long[0]);
        assertFalse(empty.hasMoreIDs());
        assertEquals(0, empty.remainingRanges().length);
        IDSet set = new IDSet(CAT, new long[] {1, 100});
        set.takeID();
        List<long[]> pushed = new ArrayList<>();
        IDSet.Pusher recorder = (r, kept) -> pushed.add(r);
        set.push(recorder);
        assertEquals("[2, 100]", java.util.Arrays.toString(pushed.get(0)));
        assertFalse(set.hasMoreIDs());
        assertEquals(0, set.countIDs());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> set.push(recorder));
        assertTrue(e.getMessage().contains("already pushed back") && e.getMessage().contains("/c"), e.getMessage());
        assertEquals(1, pushed.size(), "a consumed set is not pushed again");
        // The native side said nothing was written: the set keeps its IDs.
        IDSet failing = new IDSet(CAT, new long[] {1, 10});
        assertThrows(PoolFullException.class, () -> failing.push((r, kept) -> {
            kept[0] = 1;
            throw new PoolFullException("full", "/c");
        }));
        assertEquals(10, failing.countIDs(), "a failed push keeps the IDs");
        failing.push(recorder);
        assertEquals(2, pushed.size());
        // Also when what is thrown is not the zooid error (the heap was full as it was built).
        IDSet full = new IDSet(CAT, new long[] {1, 10});
        assertThrows(OutOfMemoryError.class, () -> full.push((r, kept) -> {
            kept[0] = 1;
            throw new OutOfMemoryError("while the exception was built");
        }));
        assertEquals(10, full.countIDs(), "a push that wrote nothing keeps its IDs whatever was thrown");
        // Nothing written, nothing thrown (the exception could not be built): an error, IDs kept.
        IDSet unsaid = new IDSet(CAT, new long[] {1, 10});
        IDGeneratorException u = assertThrows(IDGeneratorException.class, () -> unsaid.push((r, kept) -> {
            kept[0] = 1;
        }));
        assertEquals(ErrorCode.OTHER, u.getCode());
        assertEquals(10, unsaid.countIDs(), "a push that wrote nothing and returned keeps its IDs");
        // A push the native side panicked in may have been sent: never sent again.
        IDSet panicked = new IDSet(CAT, new long[] {1, 10});
        IDGeneratorException p = assertThrows(IDGeneratorException.class, () -> panicked.push((r, kept) -> {
            throw new IDGeneratorException(ErrorCode.PANIC, "a panic in the push", "/c");
        }));
        assertEquals(ErrorCode.PANIC, p.getCode());
        assertEquals(0, panicked.countIDs(), "a push that panicked left its IDs to push again");
        assertThrows(IllegalStateException.class, () -> panicked.push(recorder));
        // So is one that ended in anything else without saying nothing was written.
        IDSet odd = new IDSet(CAT, new long[] {1, 10});
        assertThrows(IllegalStateException.class, () -> odd.push((r, kept) -> {
            throw new IllegalStateException("not a zooid error");
        }));
        assertEquals(0, odd.countIDs(), "a push that ended oddly left its IDs to push again");
        assertEquals(2, pushed.size());
    }

    @Test
    void setRejectsMalformedRanges() {
        assertThrows(IllegalArgumentException.class, () -> new IDSet(CAT, new long[] {1}));
        assertThrows(IllegalArgumentException.class, () -> new IDSet(CAT, new long[] {5, 4}));
        assertThrows(IllegalArgumentException.class, () -> new IDSet(CAT, new long[] {1, 5, 5, 9}));
        assertThrows(NullPointerException.class, () -> new IDSet(null, new long[0]));
    }

    @Test
    void rangeCountsAndStopsAtTheTopOfTheIdSpace() {
        IDRange range = new IDRange(CAT, Long.MAX_VALUE - 2, Long.MAX_VALUE);
        assertEquals(3, range.countIDs());
        assertEquals(Long.MAX_VALUE - 2, range.takeID());
        assertEquals(Long.MAX_VALUE - 1, range.takeID());
        assertEquals(Long.MAX_VALUE, range.takeID());
        assertFalse(range.hasMoreIDs());
        assertEquals(0, range.countIDs());
        assertThrows(NoSuchElementException.class, range::takeID);
        assertEquals(Long.MAX_VALUE, new IDRange(CAT, Long.MIN_VALUE, Long.MAX_VALUE).countIDs());
        assertEquals("9223372036854775805:9223372036854775807", range.toString());
        assertThrows(IllegalArgumentException.class, () -> new IDRange(CAT, 2, 1));
        assertThrows(NullPointerException.class, () -> new IDRange(null, 1, 2));
    }

    @Test
    void categoryPathsAreValidatedLikeTheCore() {
        assertEquals("/a/b", new IDCategory("/a/b").getName());
        assertEquals(new IDCategory("/a/b"), new IDCategory("/a/b"));
        assertEquals(new IDCategory("/a/b").hashCode(), new IDCategory("/a/b").hashCode());
        assertEquals("/é/日本/a b", new IDCategory("/é/日本/a b").getName());
        assertEquals("/a/zooid-blocks/zooid-blocks-x", new IDCategory("/a/zooid-blocks/zooid-blocks-x").getName());
        for (String bad : new String[] {"", "/", "a/b", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\0",
                "/a\tb", "/a\u007f", "/a\ue000", "/a\ufffd", "/emoji\ud83d\ude00", "/lone\ud800",
                "/a/zooid-holes/h-0000000000000000001-0000000000000001000", "/a/zooid-blocks-0/x",
                "/a/zooid-returned", "/zooid-free-7/b"}) {
            assertThrows(IllegalArgumentException.class, () -> new IDCategory(bad), bad);
        }
        assertThrows(NullPointerException.class, () -> new IDCategory(null));
        assertTrue(new IDCategory("/x").toString().equals("/x"));
    }
}
