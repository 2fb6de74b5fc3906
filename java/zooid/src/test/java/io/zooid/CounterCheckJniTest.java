package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link CounterJniWorkload} in a JVM started with {@code -Xcheck:jni}: the run must be clean. */
class CounterCheckJniTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    @Test
    void counterUnderXcheckJniIsClean() throws Exception {
        ChildJvm child = ChildJvm.run(
                Arrays.asList("-Xcheck:jni", "-Xmx256m"), CounterJniWorkload.class, zk.connectString());
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("COUNTER WORKLOAD OK"), child.toString());
        List<String> suspicious = new ArrayList<>();
        for (String line : child.output.split("\n")) {
            String lower = line.toLowerCase(Locale.ROOT);
            if (lower.contains("jni") || lower.contains("native method")) {
                suspicious.add(line);
            }
        }
        assertEquals(new ArrayList<String>(), suspicious, "-Xcheck:jni reported problems:\n" + child.output);
    }
}
