package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Runs {@link JniWorkload} in a JVM started with {@code -Xcheck:jni}, which checks every JNI call
 * the library makes (pending exceptions, reference types and lifetimes, local reference capacity)
 * and prints a warning, or aborts, on misuse. The run must be clean.
 */
class CheckJniTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    @Test
    void workloadUnderXcheckJniIsClean() throws Exception {
        ChildJvm child = ChildJvm.run(Arrays.asList("-Xcheck:jni", "-Xmx256m"), JniWorkload.class, zk.connectString());
        assertEquals(0, child.exitCode, child.toString());
        assertTrue(child.output.contains("WORKLOAD OK"), child.toString());
        List<String> suspicious = new ArrayList<>();
        for (String line : child.output.split("\n")) {
            String lower = line.toLowerCase(Locale.ROOT);
            // Every -Xcheck:jni report names JNI or "native method" ("WARNING in native method:
            // ...", "FATAL ERROR in native method: ...", "WARNING: JNI local refs: ..."). The
            // workload's deliberate panic prints its own source path (src/jni/diagnostics.rs),
            // which is zooid's report, not the JVM's.
            boolean ownPanic = lower.startsWith("thread '") && lower.contains("src/jni/");
            if (!ownPanic && (lower.contains("jni") || lower.contains("native method"))) {
                suspicious.add(line);
            }
        }
        assertEquals(new ArrayList<String>(), suspicious, "-Xcheck:jni reported problems:\n" + child.output);
    }
}
