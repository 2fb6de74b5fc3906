package io.zooid.hadoop.example;

import io.zooid.IDCategory;
import io.zooid.IDGeneratorException;
import io.zooid.IDGeneratorOptions;
import io.zooid.IDGeneratorService;
import io.zooid.IDSource;
import io.zooid.IDSourceOptions;
import java.io.IOException;
import java.time.Duration;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Mapper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Assigns a unique ID to every input record, as the design document's {@code publishEvents}
 * does, from a prefetching {@link IDSource}: IDs are used one by one from a local batch while the
 * next batch is taken in the background (so a record never waits on ZooKeeper while one is
 * ready), and whatever the source holds goes back when the task ends (in {@link #cleanup}, which
 * Hadoop runs even when a map call fails). The first batch is {@value AssignIdsJob#BATCH_SIZE}
 * IDs; later ones double or halve with the task's consumption rate.
 *
 * <p>Output: {@code (id, record)}. Configuration: {@value AssignIdsJob#CONNECT} (required),
 * {@value AssignIdsJob#CATEGORY} (required), {@value AssignIdsJob#BATCH_SIZE} (default 10000),
 * {@value AssignIdsJob#SESSION_TIMEOUT_MS} (optional).
 */
public class AssignIdsMapper extends Mapper<LongWritable, Text, LongWritable, Text> {
    /** Counters of the job. */
    public enum Ids {
        /** Batches taken (by the source, in the background after the first). */
        BATCHES,
        /** IDs assigned to records. */
        ASSIGNED,
        /** Unused IDs pushed back at the end of a task. */
        PUSHED_BACK,
        /** Records that waited for a batch from ZooKeeper. */
        WAITED,
        /**
         * Milliseconds spent finding, extracting (or checking the cached copy of) and loading the
         * native library, as the loader measured it (first use in the task's JVM): see
         * {@link IDGeneratorService#nativeLoadTime()}. The slowest task's is what a job waits for.
         */
        NATIVE_LOAD_MS,
        /** Milliseconds spent opening the service (connecting to ZooKeeper) and the source (its first batch). */
        OPEN_MS
    }

    private static final Logger LOG = LoggerFactory.getLogger(AssignIdsMapper.class);

    private IDGeneratorService service;
    private IDCategory category;
    private IDSource ids;
    private final LongWritable outKey = new LongWritable();

    @Override
    protected void setup(Context context) throws IOException {
        Configuration conf = context.getConfiguration();
        String connect = required(conf, AssignIdsJob.CONNECT);
        category = new IDCategory(required(conf, AssignIdsJob.CATEGORY));
        int batchSize = conf.getInt(AssignIdsJob.BATCH_SIZE, 10000);
        IDGeneratorOptions options = new IDGeneratorOptions();
        long sessionTimeoutMs = conf.getLong(AssignIdsJob.SESSION_TIMEOUT_MS, 0);
        if (sessionTimeoutMs > 0) {
            options.sessionTimeout(Duration.ofMillis(sessionTimeoutMs));
        }
        // The loader's own measure of finding, extracting (or checking the cached copy) and
        // loading the library; rounded up, so a load that happened never counts 0.
        String library = IDGeneratorService.nativeLibraryInfo();
        long loadMs = ceilMillis(IDGeneratorService.nativeLoadTime());
        long loaded = System.nanoTime();
        try {
            service = IDGeneratorService.open(connect, options);
        } catch (IDGeneratorException e) {
            throw new IOException("cannot open zooid on " + connect, e);
        }
        try {
            IDSourceOptions sourceOptions = new IDSourceOptions()
                    .batch(batchSize, Math.min(batchSize, 100), Math.max(batchSize, 1_000_000));
            ids = service.openSource(category, sourceOptions);
        } catch (IDGeneratorException e) {
            service.close();
            throw new IOException("cannot take IDs from " + category, e);
        }
        long opened = System.nanoTime();
        long openMs = (opened - loaded) / 1_000_000;
        context.getCounter(Ids.NATIVE_LOAD_MS).increment(loadMs);
        context.getCounter(Ids.OPEN_MS).increment(openMs);
        LOG.info("{}: native library ready in {} ms, service and source opened in {} ms; {}",
                context.getTaskAttemptID(), loadMs, openMs, library);
    }

    @Override
    protected void map(LongWritable offset, Text record, Context context) throws IOException, InterruptedException {
        try {
            outKey.set(ids.next());
        } catch (IDGeneratorException e) {
            throw new IOException("cannot take IDs from " + category, e);
        }
        context.write(outKey, record);
        context.getCounter(Ids.ASSIGNED).increment(1);
    }

    @Override
    protected void cleanup(Context context) throws IOException {
        try {
            if (ids != null) {
                long[] stats = ids.stats(); // handed out, batches, failures, waits, last, held
                ids.close();
                context.getCounter(Ids.BATCHES).increment(stats[1]);
                context.getCounter(Ids.WAITED).increment(stats[3]);
                context.getCounter(Ids.PUSHED_BACK).increment(stats[5]);
            }
        } catch (IDGeneratorException e) {
            throw new IOException("cannot push the unused IDs " + ids + " back", e);
        } finally {
            if (service != null) {
                service.close();
            }
        }
    }

    private static long ceilMillis(Duration duration) {
        long nanos = duration.toNanos();
        return nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1);
    }

    private static String required(Configuration conf, String name) throws IOException {
        String value = conf.get(name);
        if (value == null || value.isEmpty()) {
            throw new IOException("set -D" + name + "=...");
        }
        return value;
    }
}
