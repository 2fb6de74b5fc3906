package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A write whose outcome cannot be told surfaces in Java as {@link OutcomeUnknownException}
 * (code {@link ErrorCode#OUTCOME_UNKNOWN}), the same in-doubt error as in Rust, C and the CLI
 * (docs/DESIGN.md, "When a write's fate is decided"; issue 18).
 */
class InDoubtTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A queue put whose write reaches the server (and applies) while its reply and every later
     * one are swallowed: the session's reattach attempts reach the server too but get no answer, so the servers
     * never confirm that the session can no longer write. The put ends, at its operation
     * timeout, in OutcomeUnknownException naming the put; it is not repeated. Guard: the server
     * did apply it (the item is in the queue once, read after the proxy healed).
     */
    @Test
    void aPutWhoseFateCannotBeConfirmedIsOutcomeUnknown() throws Exception {
        String path = "/zooid-java-test/in-doubt/put";
        Duration opTimeout = Duration.ofSeconds(6);
        IDGeneratorOptions quick = new IDGeneratorOptions().sessionTimeout(Duration.ofSeconds(2));
        try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(zk.connectString())) {
            try (IDGeneratorService cutOff = IDGeneratorService.open(proxy.connectString(), quick);
                    WorkQueue queue = WorkQueue.open(cutOff, path, new WorkQueueOptions().operationTimeout(opTimeout))) {
                queue.put(bytes("before"));
                // The put's write (a multi creating .../items/i-...) reaches the server and applies;
                // its reply and every later one are lost.
                proxy.dropRepliesFromRequestContaining(bytes(path + "/items/i-"));
                long started = System.nanoTime();
                OutcomeUnknownException e =
                        assertThrows(OutcomeUnknownException.class, () -> queue.put(bytes("in doubt")));
                long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
                System.out.println("InDoubtTest: put in doubt after " + millis + " ms: " + e);
                assertEquals(ErrorCode.OUTCOME_UNKNOWN, e.getCode());
                assertEquals(10, e.getCode().getValue(), "the kind table's code 10");
                assertEquals("put", e.getOperation());
                assertEquals(path, e.getCategory());
                assertEquals(0, e.countLeakedIDs(), "a put names no IDs");
                assertTrue(millis >= opTimeout.toMillis() - 500, "waited for the servers until its deadline: " + millis);
            }
            proxy.heal();
        }
        List<String> items = new ArrayList<>();
        try (IDGeneratorService direct = IDGeneratorService.open(zk.connectString());
                WorkQueue queue = WorkQueue.open(direct, path)) {
            WorkQueue.Claim claim;
            while ((claim = queue.claim(0, TimeUnit.SECONDS)) != null) {
                items.add(new String(claim.getData(), StandardCharsets.UTF_8));
                claim.complete();
            }
        }
        assertEquals(Arrays.asList("before", "in doubt"), items, "the put in doubt did apply, once");
    }
}
