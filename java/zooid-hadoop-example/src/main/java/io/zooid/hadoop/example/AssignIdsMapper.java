package io.zooid.hadoop.example;

import io.zooid.IDCategory;
import io.zooid.IDGeneratorException;
import io.zooid.IDGeneratorOptions;
import io.zooid.IDGeneratorService;
import io.zooid.IDSet;
import java.io.IOException;
import java.time.Duration;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Mapper;

/**
 * Assigns a unique ID to every input record, as the design document's {@code publishEvents}
 * does: IDs come in batches from {@link IDGeneratorService#takeIDs}, are used one by one, and
 * whatever is left of the last batch goes back with {@link IDGeneratorService#pushIDs} when the
 * task ends (in {@link #cleanup}, which Hadoop runs even when a map call fails).
 *
 * <p>Output: {@code (id, record)}. Configuration: {@value AssignIdsJob#CONNECT} (required),
 * {@value AssignIdsJob#CATEGORY} (required), {@value AssignIdsJob#BATCH_SIZE} (default 10000),
 * {@value AssignIdsJob#SESSION_TIMEOUT_MS} (optional).
 */
public class AssignIdsMapper extends Mapper<LongWritable, Text, LongWritable, Text> {
    /** Counters of the job. */
    public enum Ids {
        /** Batches taken. */
        BATCHES,
        /** IDs assigned to records. */
        ASSIGNED,
        /** Unused IDs pushed back at the end of a task. */
        PUSHED_BACK
    }

    private IDGeneratorService service;
    private IDCategory category;
    private int batchSize;
    private IDSet ids;
    private final LongWritable outKey = new LongWritable();

    @Override
    protected void setup(Context context) throws IOException {
        Configuration conf = context.getConfiguration();
        String connect = required(conf, AssignIdsJob.CONNECT);
        category = new IDCategory(required(conf, AssignIdsJob.CATEGORY));
        batchSize = conf.getInt(AssignIdsJob.BATCH_SIZE, 10000);
        IDGeneratorOptions options = new IDGeneratorOptions();
        long sessionTimeoutMs = conf.getLong(AssignIdsJob.SESSION_TIMEOUT_MS, 0);
        if (sessionTimeoutMs > 0) {
            options.sessionTimeout(Duration.ofMillis(sessionTimeoutMs));
        }
        try {
            service = IDGeneratorService.open(connect, options);
        } catch (IDGeneratorException e) {
            throw new IOException("cannot open zooid on " + connect, e);
        }
    }

    @Override
    protected void map(LongWritable offset, Text record, Context context) throws IOException, InterruptedException {
        if (ids == null || !ids.hasMoreIDs()) {
            try {
                ids = service.takeIDs(category, batchSize);
            } catch (IDGeneratorException e) {
                throw new IOException("cannot take IDs from " + category, e);
            }
            context.getCounter(Ids.BATCHES).increment(1);
        }
        outKey.set(ids.takeID());
        context.write(outKey, record);
        context.getCounter(Ids.ASSIGNED).increment(1);
    }

    @Override
    protected void cleanup(Context context) throws IOException {
        try {
            if (ids != null && ids.hasMoreIDs()) {
                long left = ids.countIDs();
                service.pushIDs(ids);
                context.getCounter(Ids.PUSHED_BACK).increment(left);
            }
        } catch (IDGeneratorException e) {
            throw new IOException("cannot push the unused IDs " + ids + " back", e);
        } finally {
            if (service != null) {
                service.close();
            }
        }
    }

    private static String required(Configuration conf, String name) throws IOException {
        String value = conf.get(name);
        if (value == null || value.isEmpty()) {
            throw new IOException("set -D" + name + "=...");
        }
        return value;
    }
}
