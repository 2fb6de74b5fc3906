package io.zooid.yarn.it;

import io.zooid.IDGeneratorService;
import io.zooid.hadoop.example.AssignIdsMapper;
import java.io.BufferedWriter;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.security.CodeSource;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.map.WrappedMapper;

/**
 * The example's {@link AssignIdsMapper}, unchanged (its setup, map and cleanup run as shipped),
 * with a journal of what each task attempt did and optional faults, for the YARN integration test.
 *
 * <p>Every attempt writes the file {@value #JOURNAL_DIR}{@code /<attempt id>}, one fact a line,
 * flushed line by line so that a killed attempt leaves what it did: {@code node}, {@code loader}
 * (the class loader of {@code io.zooid}: {@code system} or its class), {@code jar} (where
 * {@code io.zooid} came from) and {@code library} (the native library) before the first record,
 * then {@code id N} for every record before it is written, {@code cleanup-begins} and
 * {@code cleanup} around the example's {@code cleanup()} (which pushes back what the source
 * held), and last {@code end} when the attempt's run returned or {@code cause} (the exception)
 * and {@code failed} when it threw. An attempt whose JVM was stopped
 * under it has neither.
 *
 * <p>Faults, on attempt 0 only: {@value #FAIL_TASK} (a map task number) throws after
 * {@value #FAIL_AFTER} records; {@value #STRAGGLE_TASK} sleeps {@value #STRAGGLE_MS} ms after each
 * record, so that speculative execution starts a second attempt of it.
 */
public class JournalingMapper extends AssignIdsMapper {
    /** This attempt's journal, open while {@link #run} runs. */
    private Writer journal;

    /** Local directory the attempts write their journals to (all containers run on this host). */
    public static final String JOURNAL_DIR = "zooid.it.journal.dir";
    /** The map task whose attempt 0 fails; none if unset. */
    public static final String FAIL_TASK = "zooid.it.fail.task";
    /** Records the failing attempt writes before it fails. */
    public static final String FAIL_AFTER = "zooid.it.fail.after";
    /** The map task whose attempt 0 is slow; none if unset. */
    public static final String STRAGGLE_TASK = "zooid.it.straggle.task";
    /** Milliseconds the slow attempt sleeps after each record. */
    public static final String STRAGGLE_MS = "zooid.it.straggle.ms";

    @Override
    public void run(Context context) throws IOException, InterruptedException {
        Configuration conf = context.getConfiguration();
        String dir = conf.get(JOURNAL_DIR);
        if (dir == null || dir.isEmpty()) {
            throw new IOException("set -D" + JOURNAL_DIR + "=...");
        }
        TaskAttemptID attempt = context.getTaskAttemptID();
        boolean firstAttempt = attempt.getId() == 0;
        int task = attempt.getTaskID().getId();
        int failAfter = firstAttempt && conf.getInt(FAIL_TASK, -1) == task ? conf.getInt(FAIL_AFTER, 0) : -1;
        long straggleMs = firstAttempt && conf.getInt(STRAGGLE_TASK, -1) == task ? conf.getLong(STRAGGLE_MS, 0) : 0;
        File file = new File(dir, attempt.toString());
        try (Writer journal = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(file), StandardCharsets.UTF_8))) {
            this.journal = journal;
            Context journaling = new WrappedMapper<LongWritable, Text, LongWritable, Text>().new Context(context) {
                private long written;

                @Override
                public void write(LongWritable id, Text record) throws IOException, InterruptedException {
                    if (written == 0) {
                        describeZooid(journal);
                    }
                    line(journal, "id " + id.get());
                    super.write(id, record);
                    written++;
                    if (written == failAfter) {
                        throw new IOException("deliberate failure of " + attempt + " after " + written + " records");
                    }
                    if (straggleMs > 0) {
                        Thread.sleep(straggleMs);
                    }
                }
            };
            try {
                super.run(journaling);
            } catch (IOException | InterruptedException | RuntimeException e) {
                line(journal, "cause " + e.toString().replace('\n', ' '));
                line(journal, "failed");
                throw e;
            }
            line(journal, "end");
        } finally {
            this.journal = null;
        }
    }

    @Override
    protected void cleanup(Context context) throws IOException {
        line(journal, "cleanup-begins");
        super.cleanup(context);
        line(journal, "cleanup");
    }

    /** Which node, class loader, jar and native library this attempt's zooid runs on. */
    private static void describeZooid(Writer journal) throws IOException {
        line(journal, "node " + System.getenv("NM_HOST") + ":" + System.getenv("NM_PORT"));
        ClassLoader loader = IDGeneratorService.class.getClassLoader();
        line(journal, "loader " + (loader == ClassLoader.getSystemClassLoader() ? "system" : loader.getClass().getName()));
        CodeSource source = IDGeneratorService.class.getProtectionDomain().getCodeSource();
        line(journal, "jar " + (source == null ? "unknown" : source.getLocation()));
        line(journal, "library " + IDGeneratorService.nativeLibraryInfo());
    }

    private static void line(Writer journal, String line) throws IOException {
        journal.write(line);
        journal.write('\n');
        journal.flush();
    }
}
