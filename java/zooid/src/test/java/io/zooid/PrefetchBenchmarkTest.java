package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Per-ID latency of {@link IDSource#next()} while its batches are refilled in the background,
 * next to the same run's non-prefetching path ({@link IDSet#takeID()} from {@code takeIDs}
 * batches, with a blocking {@code takeIDs} when a batch runs out), on a real ZooKeeper. Every ID
 * is timed on its own with {@code System.nanoTime()}; a little busy work between IDs stands in
 * for using them. Prints a table and writes it to {@code target/prefetch-benchmark.txt}; the
 * timings are reported, not asserted (the IDs are checked).
 */
class PrefetchBenchmarkTest {
    private static final int IDS = 2_000_000;
    private static final int BATCH = 10_000;

    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    private static long sink;

    @Test
    void perIdLatencyWithAndWithoutPrefetch() throws Exception {
        IDCategory cat = new IDCategory("/zooid-java-test/prefetch-benchmark");
        StringBuilder table = new StringBuilder();
        table.append(String.format(Locale.ROOT, "%-36s %7s %7s %7s %9s %10s %7s %9s%n",
                "path (ns per ID)", "p50", "p99", "p99.9", "p99.99", "max", ">1us", "waits"));
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            service.createCategory(cat, CategorySpec.of(1, Long.MAX_VALUE));
            IDSourceOptions options = new IDSourceOptions()
                    .batch(BATCH, BATCH, 1_000_000)
                    .targetBatchDuration(java.time.Duration.ofMillis(200));
            // Warm-up (JIT), not reported.
            prefetch(service, cat, options, 300_000);
            take(service, cat, 300_000);
            double[][] ratios = new double[2][];
            for (int round = 0; round < 2; round++) {
                Result take = take(service, cat, IDS);
                Result pre = prefetch(service, cat, options, IDS);
                table.append(take.row("takeIDs(" + BATCH + ") + IDSet.takeID"));
                table.append(pre.row("IDSource.next"));
                ratios[round] = new double[] {pre.at(0.5) / take.at(0.5), pre.at(0.999) / take.at(0.999),
                    pre.at(0.9999) / take.at(0.9999), pre.max() / take.max()};
            }
            for (double[] r : ratios) {
                table.append(String.format(Locale.ROOT,
                        "ratio prefetch / take: p50 %.2fx, p99.9 %.2fx, p99.99 %.4fx, max %.3fx%n",
                        r[0], r[1], r[2], r[3]));
            }
            assertEquals(0, service.getPoolInfo(cat).getFreeRanges().size() - 1,
                    "every source and set was given back: one free range");
        }
        table.append("(").append(IDS).append(" IDs per row, ~100 ns of work between IDs; ")
                .append(System.getProperty("java.vm.name")).append(' ')
                .append(System.getProperty("java.version")).append(")\n");
        System.out.print(table);
        Path out = Paths.get(System.getProperty("zooid.prefetch.benchmark.out", "target/prefetch-benchmark.txt"));
        Files.write(out, table.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static Result prefetch(IDGeneratorService service, IDCategory cat, IDSourceOptions options, int n)
            throws IDGeneratorException {
        long[] samples = new long[n];
        long last = 0;
        long waits;
        try (IDSource source = service.openSource(cat, options)) {
            for (int i = 0; i < n; i++) {
                long t = System.nanoTime();
                long id = source.next();
                samples[i] = System.nanoTime() - t;
                assertTrue(id > last || i == 0);
                last = id;
                work(id);
            }
            waits = source.stats()[3];
        }
        return new Result(samples, waits);
    }

    private static Result take(IDGeneratorService service, IDCategory cat, int n) throws IDGeneratorException {
        long[] samples = new long[n];
        long waits = 0;
        IDSet set = service.takeIDs(cat, BATCH);
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            if (!set.hasMoreIDs()) {
                waits++;
                set = service.takeIDs(cat, BATCH);
            }
            long id = set.takeID();
            samples[i] = System.nanoTime() - t;
            work(id);
        }
        service.pushIDs(set);
        return new Result(samples, waits);
    }

    /** About 100 ns of work standing in for using the ID. */
    private static void work(long id) {
        long x = id;
        for (int i = 0; i < 60; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink += x;
    }

    private static final class Result {
        private final long[] sorted;
        private final long waits;

        Result(long[] samples, long waits) {
            this.sorted = samples.clone();
            Arrays.sort(this.sorted);
            this.waits = waits;
        }

        double at(double q) {
            return sorted[Math.min(sorted.length - 1, (int) (sorted.length * q))];
        }

        double max() {
            return sorted[sorted.length - 1];
        }

        String row(String name) {
            long over = sorted.length - lowerBound(1_000);
            return String.format(Locale.ROOT, "%-36s %7.0f %7.0f %7.0f %9.0f %10.0f %7d %9d%n",
                    name, at(0.5), at(0.99), at(0.999), at(0.9999), max(), over, waits);
        }

        private int lowerBound(long value) {
            int i = Arrays.binarySearch(sorted, value + 1);
            if (i < 0) {
                return -i - 1;
            }
            while (i > 0 && sorted[i - 1] > value) {
                i--;
            }
            while (i > 0 && sorted[i - 1] == value + 1) {
                i--;
            }
            return i;
        }
    }
}
