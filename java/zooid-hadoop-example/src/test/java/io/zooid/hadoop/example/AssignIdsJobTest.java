package io.zooid.hadoop.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.zooid.CategorySpec;
import io.zooid.IDCategory;
import io.zooid.IDGeneratorService;
import io.zooid.IDRange;
import io.zooid.PoolInfo;
import java.io.BufferedWriter;
import java.io.File;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@link AssignIdsJob} in Hadoop's local job runner, four map tasks at once, against a real
 * ZooKeeper server, and checks its output and the pool afterwards.
 */
class AssignIdsJobTest {
    private static final int FILES = 4;
    private static final int RECORDS_PER_FILE = 2500;
    private static final int BATCH = 1000;
    private static final long LAST_ID = 1_000_000;

    private static ServerCnxnFactory zk;
    private static Path zkDir;

    @BeforeAll
    static void startZooKeeper() throws Exception {
        zkDir = Files.createTempDirectory("zooid-hadoop-zk-");
        ZooKeeperServer server = new ZooKeeperServer(zkDir.toFile(), zkDir.toFile(), 500);
        zk = ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", 0), 200);
        zk.startup(server);
    }

    @AfterAll
    static void stopZooKeeper() throws Exception {
        zk.shutdown();
        try (java.util.stream.Stream<Path> paths = Files.walk(zkDir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private static String connect() {
        return "127.0.0.1:" + zk.getLocalPort();
    }

    @Test
    void everyRecordGetsAUniqueIdAndLeftoversAreRecycled(@TempDir Path dir) throws Exception {
        IDCategory category = new IDCategory("/eventpublish/idgen/did");
        try (IDGeneratorService service = IDGeneratorService.open(connect())) {
            service.createCategory(category, CategorySpec.of(1, LAST_ID));
        }
        Path input = Files.createDirectories(dir.resolve("input"));
        for (int f = 0; f < FILES; f++) {
            try (BufferedWriter out = Files.newBufferedWriter(input.resolve("events-" + f + ".txt"), StandardCharsets.UTF_8)) {
                for (int r = 0; r < RECORDS_PER_FILE; r++) {
                    out.write("event " + f + "/" + r);
                    out.newLine();
                }
            }
        }
        Path output = dir.resolve("output");

        Configuration conf = new Configuration();
        conf.set("mapreduce.framework.name", "local");
        conf.set("fs.defaultFS", "file:///");
        conf.set("hadoop.tmp.dir", dir.resolve("hadoop-tmp").toString());
        conf.setInt("mapreduce.local.map.tasks.maximum", FILES); // the maps run at the same time
        conf.set(AssignIdsJob.CONNECT, connect());
        conf.set(AssignIdsJob.CATEGORY, category.getName());
        conf.setInt(AssignIdsJob.BATCH_SIZE, BATCH);
        AssignIdsJob tool = new AssignIdsJob();
        tool.setConf(conf);
        Job job = tool.createJob(input.toString(), output.toString());
        assertTrue(job.waitForCompletion(false), "the job succeeded");

        Counters counters = job.getCounters();
        long records = (long) FILES * RECORDS_PER_FILE;
        assertEquals(records, counters.findCounter(TaskCounter.MAP_OUTPUT_RECORDS).getValue());
        assertEquals(records, counters.findCounter(AssignIdsMapper.Ids.ASSIGNED).getValue());
        // Each task's source took its first batch and prefetched more as the task ran.
        long batches = counters.findCounter(AssignIdsMapper.Ids.BATCHES).getValue();
        assertTrue(batches > FILES, "the sources refilled: " + batches + " batches");
        long pushedBack = counters.findCounter(AssignIdsMapper.Ids.PUSHED_BACK).getValue();
        assertTrue(pushedBack > 0, "the sources pushed back what they held: " + pushedBack);
        // Each task reported how long the native library took to load (in the local runner the
        // tasks share the test's JVM, so they all report its one load).
        assertTrue(counters.findCounter(AssignIdsMapper.Ids.NATIVE_LOAD_MS).getValue() > 0, "NATIVE_LOAD_MS counted");
        String summary = AssignIdsJob.startUpSummary(job);
        System.out.println(summary);
        // The local runner keeps no task reports: the summary has the job's sums.
        assertTrue(summary.matches("zooid start-up, summed over the map tasks \\(no task reports\\): "
                + "NATIVE_LOAD_MS=[1-9][0-9]* OPEN_MS=[0-9]+"), summary);

        // Every record appears once, with an ID no other record has.
        Map<String, Long> idOf = new HashMap<>();
        TreeSet<Long> ids = new TreeSet<>();
        File[] parts = output.toFile().listFiles((d, name) -> name.startsWith("part-m-"));
        assertEquals(FILES, parts.length, "one output file per map task: " + FILES + " map tasks ran");
        for (File part : parts) {
            for (String line : Files.readAllLines(part.toPath(), StandardCharsets.UTF_8)) {
                String[] fields = line.split("\t", 2);
                long id = Long.parseLong(fields[0]);
                assertTrue(ids.add(id), "ID " + id + " assigned twice");
                assertNull(idOf.put(fields[1], id), "record " + fields[1] + " written twice");
            }
        }
        assertEquals(records, idOf.size());
        for (int f = 0; f < FILES; f++) {
            for (int r = 0; r < RECORDS_PER_FILE; r++) {
                assertTrue(idOf.containsKey("event " + f + "/" + r), "record " + f + "/" + r + " has an ID");
            }
        }

        // Nothing leaked: the IDs the sources held when the tasks ended (the rest of the current
        // batch and the prefetched one) were pushed back, and are either free again or were handed
        // out again to a later take. So the free count is exactly what the records did not use,
        // and every ID up to the highest one assigned is either assigned or free.
        try (IDGeneratorService service = IDGeneratorService.open(connect())) {
            PoolInfo pool = service.getPoolInfo(category);
            assertEquals(LAST_ID - records, pool.countFreeIDs(), "leftovers were recycled: " + pool);
            long holes = 0;
            for (IDRange range : pool.getFreeRanges()) {
                for (long id = range.getStartID(); id <= range.getEndID() && id <= ids.last(); id++) {
                    assertTrue(!ids.contains(id), "ID " + id + " is both assigned and free");
                    holes++;
                }
            }
            assertEquals(ids.last() - records, holes, "every ID up to the highest assigned is assigned or free: " + pool);
            long next = service.takeIDs(category, 1).takeID();
            assertEquals(lowestHole(ids), next,
                    "the next take starts at the lowest free ID");
        }
    }

    /** The lowest ID above 0 that is not in {@code ids}. */
    private static long lowestHole(TreeSet<Long> ids) {
        long expected = 1;
        for (long id : ids) {
            if (id != expected) {
                return expected;
            }
            expected++;
        }
        return expected;
    }
}
