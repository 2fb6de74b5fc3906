package io.zooid;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Every exception a caller can act on, each provoked for real against ZooKeeper. */
class ExceptionPathsTest {
    private static final AtomicInteger NEXT = new AtomicInteger();

    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    /** A category no other test uses: JUnit makes a new instance of this class for each test. */
    private final IDCategory cat = new IDCategory("/zooid-java-test/errors/c" + NEXT.incrementAndGet());

    /** A service on the shared server, with {@link #cat} created as {@code 1..lastID}. */
    private IDGeneratorService openWithCategory(long lastID) throws IDGeneratorException {
        return openWithCategory(lastID, null);
    }

    /**
     * A service on the shared server, with {@link #cat} created as {@code 1..lastID} in {@code
     * layout} (null: the default).
     */
    private IDGeneratorService openWithCategory(long lastID, Layout layout) throws IDGeneratorException {
        IDGeneratorService service = IDGeneratorService.open(zk.connectString());
        try {
            if (layout == null) {
                service.createCategory(cat, CategorySpec.of(1, lastID));
            } else {
                service.createCategory(cat, CategorySpec.of(1, lastID).layout(layout, 0));
            }
        } catch (IDGeneratorException | RuntimeException e) {
            service.close();
            throw e;
        }
        return service;
    }

    @Test
    void missingCategoryIsNotFound() throws Exception {
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            CategoryNotFoundException e = assertThrows(CategoryNotFoundException.class, () -> service.takeIDs(cat, 1));
            assertEquals(ErrorCode.NOT_FOUND, e.getCode());
            assertEquals(cat.getName(), e.getCategory());
            assertThrows(CategoryNotFoundException.class, () -> service.getPoolInfo(cat));
        }
    }

    @Test
    void creatingTwiceIsCategoryExistsAndNeverResets() throws Exception {
        try (IDGeneratorService service = openWithCategory(100)) {
            service.takeIDs(cat, 40);
            CategoryExistsException e = assertThrows(CategoryExistsException.class, () -> service.createCategory(cat, CategorySpec.of(1, 100)));
            assertEquals(ErrorCode.CATEGORY_EXISTS, e.getCode());
            assertEquals(60, service.getPoolInfo(cat).countFreeIDs());
        }
    }

    @Test
    void emptyCategoryIsExhausted() throws Exception {
        try (IDGeneratorService service = openWithCategory(10)) {
            assertEquals(10, service.takeIDs(cat, 10).countIDs());
            IDsExhaustedException e = assertThrows(IDsExhaustedException.class, () -> service.takeIDs(cat, 10));
            assertEquals(ErrorCode.EXHAUSTED, e.getCode());
            assertTrue(e.getMessage().contains(cat.getName()), e.getMessage());
        }
    }

    @Test
    void pushOutsideTheBoundsIsRejectedAndTheSetKeepsItsIds() throws Exception {
        try (IDGeneratorService service = openWithCategory(100)) {
            IDSet foreign = new IDSet(cat, new long[] {500, 600});
            IDsOutOfBoundsException e = assertThrows(IDsOutOfBoundsException.class, () -> service.pushIDs(foreign));
            assertEquals("500:600", e.getRange().toString());
            assertEquals("1:100", e.getBounds().toString());
            assertEquals(101, foreign.countIDs());
            assertEquals(100, service.getPoolInfo(cat).countFreeIDs());
        }
    }

    @Test
    void doublePushIsAlreadyFree() throws Exception {
        try (IDGeneratorService service = openWithCategory(100)) {
            IDSet ids = service.takeIDs(cat, 10);
            IDSet copy = new IDSet(cat, ids.remainingRanges());
            service.pushIDs(ids);
            IDsAlreadyFreeException e = assertThrows(IDsAlreadyFreeException.class, () -> service.pushIDs(copy));
            assertEquals("1:10", e.getRange().toString());
            assertEquals(10, copy.countIDs(), "a rejected push keeps the IDs");
            assertEquals(100, service.getPoolInfo(cat).countFreeIDs());
        }
    }

    @Test
    void garbageInThePoolNodeIsCorruptPoolAndIsLeftUntouched() throws Exception {
        byte[] garbage = "this is not a pool\n12:oops\n".getBytes(StandardCharsets.UTF_8);
        try (IDGeneratorService service = openWithCategory(100);
                ZooKeeper client = zk.client()) {
            client.setData(cat.getName(), garbage, -1);
            CorruptPoolException e = assertThrows(CorruptPoolException.class, () -> service.takeIDs(cat, 5));
            assertEquals(ErrorCode.CORRUPT_POOL, e.getCode());
            assertEquals(cat.getName(), e.getCategory());
            assertThrows(CorruptPoolException.class, () -> service.getPoolInfo(cat));
            assertArrayEquals(garbage, client.getData(cat.getName(), false, null));
        }
    }

    /** The size limit caps the single pool node, which holds the free list in that layout. */
    @Test
    void pushThatWouldOutgrowTheSizeLimitIsPoolFull() throws Exception {
        try (IDGeneratorService service = openWithCategory(1000, Layout.SINGLE_NODE)) {
            IDSet ids = service.takeIDs(cat, 10);
            long size = service.getPoolInfo(cat).getSizeBytes();
            try (IDGeneratorService capped = IDGeneratorService.open(
                    zk.connectString(), new IDGeneratorOptions().maxPoolBytes(size))) {
                PoolFullException e = assertThrows(PoolFullException.class, () -> capped.pushIDs(ids));
                assertEquals(ErrorCode.POOL_FULL, e.getCode());
            }
            assertEquals(10, ids.countIDs(), "the IDs were not recycled and stay in the set");
            service.pushIDs(ids);
            assertEquals(1000, service.getPoolInfo(cat).countFreeIDs());
        }
    }

    /** Version conflicts on the single node, where every take is a compare-and-set. */
    @Test
    void versionConflictsPastTheRetryBudgetAreContention() throws Exception {
        IDGeneratorOptions oneAttempt = new IDGeneratorOptions().maxAttempts(1);
        try (IDGeneratorService a = IDGeneratorService.open(zk.connectString(), oneAttempt);
                IDGeneratorService b = IDGeneratorService.open(zk.connectString())) {
            a.createCategory(cat, CategorySpec.of(1, 1000).layout(Layout.SINGLE_NODE, 0));
            assertEquals(1, a.takeIDs(cat, 10).takeID()); // a now remembers version 1
            assertEquals(11, b.takeIDs(cat, 10).takeID()); // b moves the node on
            ContentionException e = assertThrows(ContentionException.class, () -> a.takeIDs(cat, 10));
            assertEquals(ErrorCode.CONTENTION, e.getCode());
            assertEquals(21, a.takeIDs(cat, 10).takeID(), "the next call reads afresh and succeeds");
        }
    }

    /**
     * A remembered single node, which a take plans on before it reads afresh: a refusal
     * ("exhausted") is decided only on a fresh read, and the plan on that read belongs to the
     * attempt that refused, so even with one attempt allowed the take is served (it was
     * {@code TIMEOUT} when the re-plan cost a second attempt).
     */
    @Test
    void aRefusalOnARememberedPoolIsDecidedOnAFreshReadWithinTheAttempt() throws Exception {
        IDGeneratorOptions oneAttempt = new IDGeneratorOptions().maxAttempts(1);
        try (IDGeneratorService a = IDGeneratorService.open(zk.connectString(), oneAttempt);
                IDGeneratorService b = IDGeneratorService.open(zk.connectString())) {
            a.createCategory(cat, CategorySpec.of(1, 10).layout(Layout.SINGLE_NODE, 0));
            IDSet all = a.takeIDs(cat, 10); // a remembers an empty pool
            b.pushIDs(all); // the store has IDs again; a does not know
            assertEquals(1, a.takeIDs(cat, 1).takeID());
            a.takeIDs(cat, 9);
            IDsExhaustedException e = assertThrows(IDsExhaustedException.class, () -> a.takeIDs(cat, 1));
            assertEquals(ErrorCode.EXHAUSTED, e.getCode());
        }
    }

    @Test
    void unreachableZooKeeperIsConnectionLost() throws Exception {
        IDGeneratorOptions quick = new IDGeneratorOptions()
                .sessionTimeout(Duration.ofSeconds(2))
                .operationTimeout(Duration.ofSeconds(2));
        try (TestZooKeeper doomed = TestZooKeeper.start()) {
            String connect = doomed.connectString();
            try (IDGeneratorService service = IDGeneratorService.open(connect, quick)) {
                service.createCategory(cat, CategorySpec.of(1, 100));
                doomed.stop();
                IDCategory unread = new IDCategory(cat.getName() + "-never-read");
                ConnectionLostException e = assertThrows(ConnectionLostException.class, () -> service.getPoolInfo(unread));
                assertEquals(ErrorCode.CONNECTION_LOST, e.getCode());
                assertThrows(ConnectionLostException.class, () -> service.takeIDs(unread, 1));
            }
            assertThrows(ConnectionLostException.class, () -> IDGeneratorService.open(connect, quick));
        }
    }

    /**
     * Lost replies to writes of the single node: the take and the push are its setData (on hole
     * nodes the reply to the listing before any write is lost first).
     */
    @Test
    void lostRepliesAreOutcomeUnknownNamingTheIdsConcerned() throws Exception {
        IDGeneratorOptions quick = new IDGeneratorOptions()
                .sessionTimeout(Duration.ofSeconds(2))
                .operationTimeout(Duration.ofSeconds(3));
        try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(zk.connectString())) {
            try (IDGeneratorService service = IDGeneratorService.open(proxy.connectString(), quick)) {
                service.createCategory(cat, CategorySpec.of(1, 100).layout(Layout.SINGLE_NODE, 0));
                assertEquals(1, service.takeIDs(cat, 10).takeID());
                proxy.dropReplies(); // the server applies the next write; its reply is lost
                OutcomeUnknownException take = assertThrows(OutcomeUnknownException.class, () -> service.takeIDs(cat, 10));
                assertEquals(ErrorCode.OUTCOME_UNKNOWN, take.getCode());
                assertEquals("take", take.getOperation());
                assertEquals(cat.getName(), take.getCategory());
                assertEquals("[11:20]", take.getLeakedIDs().toString());
                assertEquals(10, take.countLeakedIDs());
            }
            proxy.heal();
            try (IDGeneratorService service = IDGeneratorService.open(proxy.connectString(), quick)) {
                IDSet held = service.takeIDs(cat, 5);
                assertEquals("/" + cat.getName().substring(1) + " [21:25]", held.toString());
                proxy.dropReplies();
                OutcomeUnknownException push = assertThrows(OutcomeUnknownException.class, () -> service.pushIDs(held));
                assertEquals("push", push.getOperation());
                assertEquals("[21:25]", push.getLeakedIDs().toString());
                assertFalse(held.hasMoreIDs(), "a push with an unknown outcome is not repeated: the set is emptied");
            }
            proxy.heal();
        }
        // Both writes did apply: 11:20 are leaked (never handed out again), 21:25 are free again.
        try (IDGeneratorService direct = IDGeneratorService.open(zk.connectString())) {
            assertEquals("[21:100]", direct.getPoolInfo(cat).getFreeRanges().toString());
            assertEquals(21, direct.takeIDs(cat, 10).takeID());
        }
    }

    @Test
    void refusedByAclIsNotAuthorized() throws Exception {
        try (IDGeneratorService alice = IDGeneratorService.open(
                        zk.connectString(), new IDGeneratorOptions().digestAuth("alice", "secret"));
                IDGeneratorService anonymous = IDGeneratorService.open(zk.connectString());
                IDGeneratorService mallory = IDGeneratorService.open(
                        zk.connectString(), new IDGeneratorOptions().digestAuth("mallory", "guess"))) {
            alice.createCategory(cat, CategorySpec.of(1, 100));
            assertEquals(1, alice.takeIDs(cat, 1).takeID());
            for (IDGeneratorService other : new IDGeneratorService[] {anonymous, mallory}) {
                NotAuthorizedException e = assertThrows(NotAuthorizedException.class, () -> other.takeIDs(cat, 1));
                assertEquals(ErrorCode.NOT_AUTHORIZED, e.getCode(), e.toString());
            }
            assertEquals(99, alice.getPoolInfo(cat).countFreeIDs());
        }
    }

    @Test
    void aRustPanicBecomesAnExceptionAndTheLibraryKeepsWorking() throws Exception {
        for (int i = 0; i < 3; i++) {
            IDGeneratorException e = assertThrows(IDGeneratorException.class, ZooidNative::panicForTest);
            assertEquals(ErrorCode.PANIC, e.getCode());
            assertTrue(e.getMessage().contains("deliberate panic"), e.getMessage());
        }
        try (IDGeneratorService service = openWithCategory(10)) {
            assertEquals(1, service.takeIDs(cat, 1).takeID());
        }
    }

    /**
     * A panic in a native method Java declares without checked exceptions (a free, a close)
     * becomes an {@link IllegalStateException}, never a checked exception the caller was told
     * cannot come.
     */
    @Test
    void aPanicWhereNoCheckedExceptionIsDeclaredIsUnchecked() {
        IllegalStateException e = assertThrows(IllegalStateException.class, ZooidNative::uncheckedPanicForTest);
        assertTrue(e.getMessage().contains("deliberate panic"), e.getMessage());
    }
}
