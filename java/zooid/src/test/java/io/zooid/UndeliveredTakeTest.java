package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A take that succeeded in the native library but whose {@code long[]} the JVM could not build
 * (a real {@link OutOfMemoryError} in a small heap, see {@link UndeliveredTakeWorkload}): its IDs
 * are pushed back (or reported leaked) and the exception says which, instead of vanishing.
 */
class UndeliveredTakeTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    @Test
    void idsOfATakeJavaCouldNotReceiveArePushedBack() throws Exception {
        ChildJvm child = ChildJvm.run(
                Arrays.asList("-Xmx24m", "-XX:+UseSerialGC", "-Xss1m"),
                UndeliveredTakeWorkload.class, zk.connectString());
        System.out.println(child.output);
        // The guard: the array allocation really failed (the take did not succeed).
        assertTrue(child.output.contains("take failed with"), child.toString());
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("UNDELIVERED OK: returned"), child.toString());
    }
}
