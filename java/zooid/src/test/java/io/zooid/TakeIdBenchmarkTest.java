package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * ns per ID of {@link IDSet#takeID()} in Java next to the Rust {@code IdSet::take_id} over the
 * same ranges, measured in the same run (the Rust loop runs in the loaded native library through
 * {@code ZooidNative.benchTakeIds}). Prints a table and writes it to
 * {@code target/take-id-benchmark.txt}. Both loops must agree on the IDs they produced; the
 * timings themselves are reported, not asserted.
 */
class TakeIdBenchmarkTest {
    private static final IDCategory CAT = new IDCategory("/zooid/benchmark");
    private static final int ROUNDS = 7;

    @Test
    void javaTakeIdAgainstRustTakeId() throws IOException {
        Object[][] layouts = {
            {"1 range of 10,000,000 IDs", ranges(1, 10_000_000)},
            {"1,000 ranges of 1,000 IDs", ranges(1_000, 1_000)},
            {"100,000 ranges of 10 IDs", ranges(100_000, 10)},
        };
        StringBuilder table = new StringBuilder();
        table.append(String.format(Locale.ROOT, "%-28s %12s %14s %14s %12s%n",
                "layout", "IDs", "Java ns/ID", "Rust ns/ID", "Java/Rust"));
        for (Object[] layout : layouts) {
            long[] ranges = (long[]) layout[1];
            long count = 0;
            for (int i = 0; i < ranges.length; i += 2) {
                count += ranges[i + 1] - ranges[i] + 1;
            }
            double[] java = new double[ROUNDS];
            double[] rust = new double[ROUNDS];
            for (int round = -2; round < ROUNDS; round++) { // two warm-up rounds
                long[] viaJava = javaLoop(ranges, count);
                long[] viaRust = ZooidNative.benchTakeIds(ranges, count);
                assertEquals(count, viaRust[1], "Rust took every ID");
                assertEquals(viaJava[1], viaRust[2], "Java and Rust produced the same IDs");
                if (round >= 0) {
                    java[round] = (double) viaJava[0] / count;
                    rust[round] = (double) viaRust[0] / count;
                }
            }
            double javaNs = median(java);
            double rustNs = median(rust);
            assertTrue(javaNs > 0 && rustNs > 0);
            table.append(String.format(Locale.ROOT, "%-28s %12d %14.3f %14.3f %12.2f%n",
                    layout[0], count, javaNs, rustNs, javaNs / rustNs));
        }
        table.append("(median of ").append(ROUNDS).append(" rounds after 2 warm-up rounds; ")
                .append(System.getProperty("java.vm.name")).append(' ')
                .append(System.getProperty("java.version")).append(")\n");
        System.out.print(table);
        Path out = Paths.get(System.getProperty("zooid.benchmark.out", "target/take-id-benchmark.txt"));
        Files.write(out, table.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** Takes {@code count} IDs from a new set: [elapsed ns, wrapping sum of the IDs]. */
    private static long[] javaLoop(long[] ranges, long count) {
        IDSet set = new IDSet(CAT, ranges);
        long sum = 0;
        long start = System.nanoTime();
        for (long i = 0; i < count; i++) {
            sum += set.takeID();
        }
        long elapsed = System.nanoTime() - start;
        assertTrue(!set.hasMoreIDs());
        return new long[] {elapsed, sum};
    }

    /** {@code n} ranges of {@code size} IDs with gaps of 7 between them. */
    private static long[] ranges(int n, long size) {
        long[] out = new long[n * 2];
        long next = 1;
        for (int i = 0; i < n; i++) {
            out[2 * i] = next;
            out[2 * i + 1] = next + size - 1;
            next += size + 7;
        }
        return out;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
