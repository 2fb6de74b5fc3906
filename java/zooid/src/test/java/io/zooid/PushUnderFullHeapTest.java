package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Review (the bindings' takes and pushes): a push refused with nothing written whose exception
 * the JVM could not build (a real {@link OutOfMemoryError} in a small heap, see
 * {@link PushUnderFullHeapWorkload}) emptied the set: the set decided from the class of what was
 * thrown, and its IDs were neither free, nor held, nor reported. The native side now says
 * "nothing written" in a word Java allocated before the push. On the code before:
 * {@code PUSH LOST}.
 */
class PushUnderFullHeapTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    @Test
    void aPushThatWroteNothingKeepsItsIdsWhenItsExceptionCannotBeBuilt() throws Exception {
        ChildJvm child = ChildJvm.run(
                Arrays.asList("-Xmx24m", "-XX:+UseSerialGC", "-Xss1m"),
                PushUnderFullHeapWorkload.class, zk.connectString());
        System.out.println(child.output);
        // The guard: a push refused with nothing written did not end in its PoolFullException.
        assertTrue(child.output.contains("provoked: "), child.toString());
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("FULL HEAP OK"), child.toString());
    }
}
