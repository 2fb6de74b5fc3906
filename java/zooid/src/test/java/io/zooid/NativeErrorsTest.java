package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The mapping from native error codes to exception classes (the Java half of the boundary). */
class NativeErrorsTest {
    @Test
    void everyCodeMapsToItsExceptionWithCodeMessageAndCategory() {
        Object[][] cases = {
            {ErrorCode.EXHAUSTED, IDsExhaustedException.class},
            {ErrorCode.NOT_FOUND, CategoryNotFoundException.class},
            {ErrorCode.CATEGORY_EXISTS, CategoryExistsException.class},
            {ErrorCode.OUT_OF_BOUNDS, IDsOutOfBoundsException.class},
            {ErrorCode.ALREADY_FREE, IDsAlreadyFreeException.class},
            {ErrorCode.CORRUPT_POOL, CorruptPoolException.class},
            {ErrorCode.POOL_FULL, PoolFullException.class},
            {ErrorCode.CONTENTION, ContentionException.class},
            {ErrorCode.OUTCOME_UNKNOWN, OutcomeUnknownException.class},
            {ErrorCode.CONNECTION_LOST, ConnectionLostException.class},
            {ErrorCode.TIMEOUT, OperationTimeoutException.class},
            {ErrorCode.VERSION_WRAP, IDGeneratorException.class},
            {ErrorCode.STORE, IDGeneratorException.class},
            {ErrorCode.RUNTIME_THREAD, IDGeneratorException.class},
            {ErrorCode.PANIC, IDGeneratorException.class},
            {ErrorCode.OTHER, IDGeneratorException.class},
            {ErrorCode.NOT_LEADER, NotLeaderException.class},
            {ErrorCode.SESSION_LOST, SessionLostException.class},
            {ErrorCode.QUEUE_FULL, QueueFullException.class},
            {ErrorCode.TOO_LARGE, TooLargeException.class},
            {ErrorCode.NOT_AUTHORIZED, NotAuthorizedException.class},
            {ErrorCode.RESERVATION_EXHAUSTED, ReservationExhaustedException.class},
            {ErrorCode.WENT_BACKWARDS, WentBackwardsException.class},
            {ErrorCode.AUTH_FAILED, AuthenticationFailedException.class},
            {ErrorCode.FORKED, IDGeneratorException.class},
        };
        Set<ErrorCode> seen = EnumSet.noneOf(ErrorCode.class);
        for (Object[] c : cases) {
            ErrorCode code = (ErrorCode) c[0];
            Throwable t = NativeErrors.create(code.getValue(), "msg " + code, "/cat", null, null);
            assertEquals(c[1], t.getClass(), code.toString());
            IDGeneratorException e = (IDGeneratorException) t;
            assertEquals(code, e.getCode());
            assertEquals("msg " + code, e.getMessage());
            assertEquals("/cat", e.getCategory());
            seen.add(code);
        }
        seen.add(ErrorCode.CLOSED); // checked below: a closed handle is an IllegalStateException
        assertEquals(EnumSet.allOf(ErrorCode.class), seen, "every code is covered");
        assertInstanceOf(IllegalStateException.class,
                NativeErrors.create(ErrorCode.CLOSED.getValue(), "closed", "/g", null, null));
    }

    @Test
    void misuseCodesMapToStandardRuntimeExceptions() {
        assertInstanceOf(IllegalArgumentException.class, NativeErrors.create(1, "bad", null, null, null));
        assertInstanceOf(NullPointerException.class, NativeErrors.create(-1, "null", null, null, null));
        assertInstanceOf(IllegalStateException.class, NativeErrors.create(-2, "closed", null, null, null));
        IDGeneratorException unknown = (IDGeneratorException) NativeErrors.create(999, "?", null, null, null);
        assertEquals(ErrorCode.OTHER, unknown.getCode());
    }

    @Test
    void rangesTravelWithTheExceptionsThatNameIds() {
        OutcomeUnknownException lost = (OutcomeUnknownException) NativeErrors.create(
                10, "lost", "/cat", "take", new long[] {1, 10, 20, 29});
        assertEquals("take", lost.getOperation());
        List<IDRange> leaked = lost.getLeakedIDs();
        assertEquals("[1:10, 20:29]", leaked.toString());
        assertEquals(20, lost.countLeakedIDs());
        IDsOutOfBoundsException out = (IDsOutOfBoundsException) NativeErrors.create(
                5, "out", "/cat", null, new long[] {200, 300, 1, 100});
        assertEquals("200:300", out.getRange().toString());
        assertEquals("1:100", out.getBounds().toString());
        IDsAlreadyFreeException twice = (IDsAlreadyFreeException) NativeErrors.create(
                6, "twice", "/cat", null, new long[] {5, 6});
        assertEquals("5:6", twice.getRange().toString());
        IDsAlreadyFreeException bare = new IDsAlreadyFreeException("no range", "/cat", null);
        assertNull(bare.getRange());
    }

    @Test
    void codesHaveStableNumbers() {
        assertEquals(2, ErrorCode.EXHAUSTED.getValue());
        assertEquals(10, ErrorCode.OUTCOME_UNKNOWN.getValue());
        assertEquals(17, ErrorCode.PANIC.getValue());
        assertEquals(24, ErrorCode.NOT_AUTHORIZED.getValue());
        assertEquals(27, ErrorCode.AUTH_FAILED.getValue());
        assertEquals(28, ErrorCode.FORKED.getValue());
        for (ErrorCode code : ErrorCode.values()) {
            assertEquals(code, ErrorCode.fromValue(code.getValue()));
        }
        assertEquals(ErrorCode.OTHER, ErrorCode.fromValue(0));
    }
}
