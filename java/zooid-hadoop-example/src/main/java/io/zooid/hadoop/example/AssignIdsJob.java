package io.zooid.hadoop.example;

import java.io.IOException;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskReport;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * A map-only job that writes every input line with a unique ID: {@code id<TAB>line}.
 *
 * <pre>
 * export HADOOP_CLASSPATH=zooid-0.1.0.jar
 * hadoop jar zooid-hadoop-example-0.1.0.jar io.zooid.hadoop.example.AssignIdsJob \
 *     -libjars zooid-0.1.0.jar \
 *     -D zooid.connect=zk1:2181,zk2:2181,zk3:2181 \
 *     -D zooid.category=/eventpublish/idgen/did \
 *     -D zooid.batch.size=10000 \
 *     /input/events /output/events-with-ids
 * </pre>
 *
 * The zooid jar carries its native library, so the tasks need nothing else installed. The
 * category must exist (create it once with {@code IDGeneratorService.createCategory} or
 * {@code zooid init}).
 */
public class AssignIdsJob extends Configured implements Tool {
    /** ZooKeeper connect string, {@code host:port,...[/chroot]}. */
    public static final String CONNECT = "zooid.connect";
    /** The category (pool node path) the IDs come from. */
    public static final String CATEGORY = "zooid.category";
    /** IDs in the first batch; later batches adapt to the task's consumption rate. */
    public static final String BATCH_SIZE = "zooid.batch.size";
    /** ZooKeeper session timeout in milliseconds. */
    public static final String SESSION_TIMEOUT_MS = "zooid.session.timeout.ms";

    @Override
    public int run(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: AssignIdsJob [generic options] -D " + CONNECT + "=... -D " + CATEGORY
                    + "=... <input> <output>");
            ToolRunner.printGenericCommandUsage(System.err);
            return 2;
        }
        Job job = createJob(args[0], args[1]);
        boolean ok = job.waitForCompletion(true);
        System.out.println(startUpSummary(job));
        return ok ? 0 : 1;
    }

    /**
     * The slowest map task's start-up counters, {@code NATIVE_LOAD_MS} and {@code OPEN_MS}: the
     * job-wide counters sum over tasks, while the slowest task is what the job waits for. Where
     * the job keeps no task reports (the local job runner), the job's sums.
     */
    public static String startUpSummary(Job job) throws IOException, InterruptedException {
        long load = 0;
        long open = 0;
        int tasks = 0;
        for (TaskReport report : job.getTaskReports(TaskType.MAP)) {
            Counters counters = report.getTaskCounters();
            load = Math.max(load, counters.findCounter(AssignIdsMapper.Ids.NATIVE_LOAD_MS).getValue());
            open = Math.max(open, counters.findCounter(AssignIdsMapper.Ids.OPEN_MS).getValue());
            tasks++;
        }
        String of;
        if (tasks > 0) {
            of = "slowest of " + tasks + " map tasks";
        } else {
            Counters counters = job.getCounters();
            load = counters.findCounter(AssignIdsMapper.Ids.NATIVE_LOAD_MS).getValue();
            open = counters.findCounter(AssignIdsMapper.Ids.OPEN_MS).getValue();
            of = "summed over the map tasks (no task reports)";
        }
        return "zooid start-up, " + of + ": " + AssignIdsMapper.Ids.NATIVE_LOAD_MS + "=" + load + " "
                + AssignIdsMapper.Ids.OPEN_MS + "=" + open;
    }

    /** The configured job, not yet submitted. */
    public Job createJob(String input, String output) throws Exception {
        Job job = Job.getInstance(getConf(), "zooid: assign IDs");
        job.setJarByClass(AssignIdsJob.class);
        job.setMapperClass(AssignIdsMapper.class);
        job.setNumReduceTasks(0);
        job.setInputFormatClass(TextInputFormat.class);
        job.setOutputFormatClass(TextOutputFormat.class);
        job.setOutputKeyClass(LongWritable.class);
        job.setOutputValueClass(Text.class);
        FileInputFormat.addInputPath(job, new Path(input));
        FileOutputFormat.setOutputPath(job, new Path(output));
        return job;
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new AssignIdsJob(), args));
    }
}
