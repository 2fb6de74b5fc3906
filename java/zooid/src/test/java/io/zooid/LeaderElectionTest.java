package io.zooid;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link LeaderElection} against a real ZooKeeper: leadership, hand-over, listener, fencing, close. */
class LeaderElectionTest {
    private static final AtomicInteger NEXT = new AtomicInteger();

    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    static String freshGroup() {
        return "/zooid-java-test/election/g" + NEXT.incrementAndGet();
    }

    /** A listener that records every call, with the thread it came on. */
    static final class Recorder implements LeaderElection.Listener {
        final BlockingQueue<Object[]> events = new LinkedBlockingQueue<>();

        @Override
        public void stateChanged(LeaderState state, long fencingToken) {
            events.add(new Object[] {state, fencingToken, Thread.currentThread()});
        }

        /** Waits for the next event in {@code state}, skipping others; fails after 30 s. */
        Object[] next(LeaderState state) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            List<Object> skipped = new ArrayList<>();
            while (System.nanoTime() < deadline) {
                Object[] event = events.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (event == null) {
                    break;
                }
                if (event[0] == state) {
                    return event;
                }
                skipped.add(event[0]);
            }
            throw new AssertionError("no " + state + " event within 30 s; saw " + skipped);
        }
    }

    @Test
    void oneLeaderOfTwoAndHandOverOnCloseWithAHigherToken() throws Exception {
        String group = freshGroup();
        Recorder recorderA = new Recorder();
        try (IDGeneratorService serviceA = IDGeneratorService.open(zk.connectString());
                IDGeneratorService serviceB = IDGeneratorService.open(zk.connectString())) {
            assertFalse(LeaderElection.leader(serviceB, group).isPresent(), "nobody leads yet");
            LeaderElection a = LeaderElection.join(
                    serviceA, group, "alpha", "addr-a".getBytes(StandardCharsets.UTF_8), PausePolicy.STOP, recorderA);
            long tokenA = a.awaitLeadership(20, TimeUnit.SECONDS);
            assertTrue(tokenA > 0);
            assertEquals(LeaderState.ACTIVE, a.getState());
            assertEquals(tokenA, a.getFencingToken());
            assertEquals(1, a.getTerms());

            // The listener saw ACTIVE with the token, on the election's own Java thread.
            Object[] active = recorderA.next(LeaderState.ACTIVE);
            assertEquals(tokenA, active[1]);
            Thread listenerThread = (Thread) active[2];
            assertEquals("zooid-election-" + group, listenerThread.getName());
            assertTrue(listenerThread.isDaemon());

            try (LeaderElection b = LeaderElection.join(serviceB, group, "beta")) {
                assertEquals(LeaderState.INACTIVE, b.getState());
                assertEquals(0, b.getFencingToken());
                long started = System.nanoTime();
                assertThrows(OperationTimeoutException.class, () -> b.awaitLeadership(300, TimeUnit.MILLISECONDS));
                assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(290));
                assertThrows(NotLeaderException.class, () -> b.create(group + "-x", new byte[0]));

                LeaderInfo leader = LeaderElection.leader(serviceB, group).get();
                assertEquals("alpha", leader.getName());
                assertArrayEquals("addr-a".getBytes(StandardCharsets.UTF_8), leader.getData());
                assertEquals(tokenA, leader.getFencingToken());
                assertTrue(leader.getNode().startsWith(group + "/"), leader.getNode());

                // Closing the leader hands over to B, with a higher token.
                a.close();
                a.close();
                long tokenB = b.awaitLeadership(20, TimeUnit.SECONDS);
                assertTrue(tokenB > tokenA, tokenB + " > " + tokenA);
                assertEquals("beta", LeaderElection.leader(serviceA, group).get().getName());
                Object[] last = recorderA.next(LeaderState.INACTIVE);
                assertEquals(0L, last[1]);
                assertFalse(listenerThread.isAlive(), "close stops the listener thread");
            }
        }
    }

    @Test
    void closeAndResignSemantics() throws Exception {
        String group = freshGroup();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            LeaderElection e = LeaderElection.join(service, group, "solo");
            e.awaitLeadership(20, TimeUnit.SECONDS);
            String resource = group + "-resource";
            e.create(resource, "0".getBytes(StandardCharsets.UTF_8));
            assertEquals(1, e.setData(resource, "1".getBytes(StandardCharsets.UTF_8), 0));
            assertThrows(IllegalArgumentException.class, () -> e.setData(resource, new byte[0], -1));
            assertThrows(IllegalArgumentException.class, () -> e.delete(resource, -1));
            IDGeneratorException stale = assertThrows(
                    IDGeneratorException.class, () -> e.setData(resource, new byte[0], 0));
            assertEquals(ErrorCode.STORE, stale.getCode());

            e.resign();
            e.resign();
            assertEquals(LeaderState.INACTIVE, e.getState());
            assertThrows(IllegalStateException.class, () -> e.awaitLeadership(1, TimeUnit.SECONDS));
            assertThrows(IllegalStateException.class, () -> e.setData(resource, new byte[0], 1));
            assertFalse(LeaderElection.leader(service, group).isPresent(), "resign left the group");

            e.close();
            e.close();
            assertTrue(e.isClosed());
            assertThrows(IllegalStateException.class, e::getState);
            assertThrows(IllegalStateException.class, e::getFencingToken);
            assertThrows(IllegalStateException.class, e::resign);
            assertThrows(IllegalStateException.class, () -> e.delete(resource, 1));

            // Misuse.
            assertThrows(NullPointerException.class, () -> LeaderElection.join(service, null, "x"));
            assertThrows(IllegalArgumentException.class, () -> LeaderElection.join(service, "relative", "x"));
            assertThrows(IllegalArgumentException.class, () -> LeaderElection.join(service, group, ""));
            // A NUL would cut the name short for a C caller asking who leads.
            assertThrows(IllegalArgumentException.class, () -> LeaderElection.join(service, group, "a\0b"));
            // An unpaired surrogate is not turned into U+FFFD on the way in; a pair, or U+FFFD
            // itself, crosses unchanged.
            assertThrows(IllegalArgumentException.class, () -> LeaderElection.join(service, group, "x\ud800"));
            String unusual = "\ud83d\ude00 \ufffd";
            try (LeaderElection named = LeaderElection.join(service, group, unusual)) {
                named.awaitLeadership(20, TimeUnit.SECONDS);
                assertEquals(unusual, LeaderElection.leader(service, group).get().getName());
            }
            assertThrows(TooLargeException.class, () -> LeaderElection.join(
                    service, group, "x", new byte[64 * 1024 + 1], PausePolicy.KEEP, null));
        }
        try (IDGeneratorService mem = IDGeneratorService.open("mem:")) {
            assertThrows(IllegalArgumentException.class, () -> LeaderElection.join(mem, "/g", "x"));
            assertThrows(IllegalArgumentException.class, () -> LeaderElection.leader(mem, "/g"));
        }
        IDGeneratorService closed = IDGeneratorService.open(zk.connectString());
        closed.close();
        assertThrows(IllegalStateException.class, () -> LeaderElection.join(closed, "/g", "x"));
    }

    /** close() from one thread wakes another blocked in awaitLeadership, which then throws. */
    @Test
    void closeWakesAThreadAwaitingLeadership() throws Exception {
        String group = freshGroup();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString());
                LeaderElection leader = LeaderElection.join(service, group, "leader")) {
            leader.awaitLeadership(20, TimeUnit.SECONDS);
            LeaderElection waiting = LeaderElection.join(service, group, "waiting");
            BlockingQueue<Throwable> outcome = new LinkedBlockingQueue<>();
            Thread awaiter = new Thread(() -> {
                try {
                    waiting.awaitLeadership(60, TimeUnit.SECONDS);
                    outcome.add(new AssertionError("led while the leader stayed"));
                } catch (Throwable t) {
                    outcome.add(t);
                }
            });
            awaiter.start();
            // Guard: the awaiter is inside the native wait when close() comes.
            assertTrue(waitFor(Duration.ofSeconds(10), () -> java.util.Arrays.stream(awaiter.getStackTrace())
                    .anyMatch(f -> f.getMethodName().equals("electionAwaitLeadership"))));
            long started = System.nanoTime();
            waiting.close();
            Throwable thrown = outcome.poll(20, TimeUnit.SECONDS);
            assertTrue(thrown instanceof IllegalStateException, String.valueOf(thrown));
            assertTrue(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started) < 10, "close was prompt");
            awaiter.join(10_000);
            assertEquals("leader", LeaderElection.leader(service, group).get().getName());
        }
    }

    /** A listener that closes its own election from its callback does not deadlock. */
    @Test
    void listenerMayCloseItsOwnElection() throws Exception {
        String group = freshGroup();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            BlockingQueue<LeaderState> seen = new LinkedBlockingQueue<>();
            LeaderElection[] self = new LeaderElection[1];
            Object ready = new Object();
            synchronized (ready) {
                self[0] = LeaderElection.join(service, group, "self-closing", null, PausePolicy.KEEP, (state, token) -> {
                    seen.add(state);
                    if (state == LeaderState.ACTIVE) {
                        synchronized (ready) {
                            self[0].close();
                        }
                    }
                });
            }
            assertEquals(LeaderState.ACTIVE, seen.poll(30, TimeUnit.SECONDS));
            assertTrue(waitFor(Duration.ofSeconds(10), () -> self[0].isClosed()));
            assertTrue(waitFor(Duration.ofSeconds(10), () -> {
                try {
                    return !LeaderElection.leader(service, group).isPresent();
                } catch (IDGeneratorException e) {
                    throw new AssertionError(e);
                }
            }));
        }
    }

    /**
     * The leader's session is cut off (its replies are swallowed by a proxy) past its 2 s session
     * timeout: it goes PAUSED, then INACTIVE; the other candidate leads with a higher token; the
     * ex-leader's fenced write is refused with {@link NotLeaderException} and the resource keeps
     * the new leader's value.
     */
    @Test
    void anExLeaderIsFencedOff() throws Exception {
        String group = freshGroup();
        String resource = group + "-resource";
        Recorder recorderA = new Recorder();
        try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(zk.connectString());
                IDGeneratorService serviceA = IDGeneratorService.open(
                        proxy.connectString(), new IDGeneratorOptions().sessionTimeout(Duration.ofSeconds(2)));
                IDGeneratorService serviceB = IDGeneratorService.open(zk.connectString());
                LeaderElection a = LeaderElection.join(serviceA, group, "alpha", null, PausePolicy.KEEP, recorderA)) {
            // Alpha leads before beta joins: a candidate joins in the background, so two joined
            // back to back may line up in either order (beta, not behind a proxy, came first once
            // in CI, and alpha waited for leadership in vain).
            long tokenA = a.awaitLeadership(20, TimeUnit.SECONDS);
            try (LeaderElection b = LeaderElection.join(serviceB, group, "beta")) {
                a.create(resource, "a".getBytes(StandardCharsets.UTF_8));
                long started = System.nanoTime();
                proxy.dropReplies();

                assertEquals(tokenA, recorderA.next(LeaderState.PAUSED)[1]);
                recorderA.next(LeaderState.INACTIVE);
                long tokenB = b.awaitLeadership(30, TimeUnit.SECONDS);
                long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
                assertTrue(tokenB > tokenA, tokenB + " > " + tokenA);
                assertEquals(LeaderState.INACTIVE, a.getState());

                NotLeaderException refused = assertThrows(
                        NotLeaderException.class, () -> a.setData(resource, "late".getBytes(StandardCharsets.UTF_8), 0));
                assertEquals(group, refused.getCategory());
                assertEquals(1, b.setData(resource, "b".getBytes(StandardCharsets.UTF_8), 0));
                try (ZooKeeper plain = zk.client()) {
                    assertArrayEquals("b".getBytes(StandardCharsets.UTF_8), plain.getData(resource, false, null));
                }
                System.out.println("FIGURES java-election ex-leader: new leader " + tookMs + " ms after the cut (session 2 s)");
                proxy.heal();
            }
        }
    }

    interface Condition {
        boolean holds() throws Exception;
    }

    static boolean waitFor(Duration timeout, Condition condition) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.holds()) {
                return true;
            }
            Thread.sleep(20);
        }
        return condition.holds();
    }

    /**
     * A wipe of ZooKeeper, simulated: the group's nodes are deleted with the plain ZooKeeper
     * client and the group is joined again, so its node is created again and sequence numbers
     * restart at 0. The next leader's token is still greater than every token before (the epoch,
     * the group node's creation second, grew). Also: an Active leader has a running lease.
     */
    @Test
    void tokensGrowAcrossARecreatedGroupNodeAndTheLeaseRuns() throws Exception {
        String group = freshGroup();
        long before = 0;
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            for (int term = 0; term < 3; term++) {
                try (LeaderElection e = LeaderElection.join(service, group, "before-" + term)) {
                    long token = e.awaitLeadership(20, TimeUnit.SECONDS);
                    assertTrue(token > before, token + " > " + before);
                    before = token;
                    if (term == 0) {
                        assertTrue(waitFor(Duration.ofSeconds(20), () -> !e.getLeaseRemaining().isZero()),
                                "an Active leader's lease runs");
                        Duration left = e.getLeaseRemaining();
                        assertTrue(left.compareTo(Duration.ofMinutes(1)) < 0, "lease " + left);
                    }
                }
            }
            assertTrue((before & 0x7fffffffL) >= 2, "the last token carries sequence " + (before & 0x7fffffffL));
            // The epoch is the group node's creation second: a real wipe and re-creation are
            // further apart than this.
            Thread.sleep(1100);
            try (ZooKeeper plain = zk.client()) {
                assertNotNull(plain.exists(group, false), "the group node exists before the wipe");
                org.apache.zookeeper.ZKUtil.deleteRecursive(plain, group);
                assertEquals(null, plain.exists(group, false), "wiped");
            }
            try (LeaderElection after = LeaderElection.join(service, group, "after")) {
                long token = after.awaitLeadership(20, TimeUnit.SECONDS);
                assertEquals(0, token & 0x7fffffffL, "the sequence restarted after the wipe");
                assertTrue(token > before, "token after the wipe " + token + " > before " + before);
                assertEquals(token, LeaderElection.leader(service, group).get().getFencingToken());
                System.out.println("FIGURES java-election wipe: token before " + before + " after " + token);
            }
        }
    }

    @Test
    void leaderInfoDecodesTheNativeLayout() {
        byte[] name = "n".getBytes(StandardCharsets.UTF_8);
        byte[] node = "/g/x".getBytes(StandardCharsets.UTF_8);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(8 + 4 + name.length + 4 + node.length + 2);
        b.putLong(42).putInt(name.length).put(name).putInt(node.length).put(node).put((byte) 7).put((byte) 8);
        LeaderInfo info = LeaderInfo.decode(b.array());
        assertEquals("n", info.getName());
        assertEquals("/g/x", info.getNode());
        assertEquals(42, info.getFencingToken());
        assertArrayEquals(new byte[] {7, 8}, info.getData());
        assertNotNull(info.toString());
    }
}
