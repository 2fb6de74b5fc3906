package io.zooid.yarn.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.zooid.CategorySpec;
import io.zooid.IDCategory;
import io.zooid.IDGeneratorService;
import io.zooid.IDRange;
import io.zooid.PoolInfo;
import io.zooid.hadoop.example.AssignIdsJob;
import io.zooid.hadoop.example.AssignIdsMapper;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CommonConfigurationKeysPublic;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobCounter;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskReport;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.util.GenericOptionsParser;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the example job ({@link AssignIdsJob}, its mapper wrapped by {@link JournalingMapper}) on a
 * MiniMRYarnCluster with two NodeManagers against a real ZooKeeper server on loopback, as a user
 * submits it: the example jar is the job jar and the zooid jar goes with {@code -libjars} (parsed
 * by {@link GenericOptionsParser}, as {@code hadoop jar} does), and the containers' classpath is
 * Hadoop's alone (not the test's, which a mini cluster passes on by default), so every task loads
 * zooid from the jar the job shipped and extracts the native library from it.
 *
 * <p>Each run has {@value #TASKS} map tasks of {@value #RECORDS_PER_TASK} records, each task in
 * its own container JVM. Every run checks one ID per record and no repeats; that each task's
 * output is exactly what its successful attempt handed out; that no ID was handed out to two
 * records by any attempts; and the pool afterwards: an ID handed out by an attempt whose output
 * was discarded (failed or killed) is leaked, never free again and never another record's; what
 * an attempt held unused is pushed back by its {@code cleanup()}, so IDs may be neither free nor
 * handed out only if an attempt was stopped before its cleanup() ended (a killed speculative
 * loser). The figures go to {@code target/yarn-job-figures.txt}, the attempts' journals to
 * {@code target/yarn-journals/}.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class AssignIdsOnYarnIT {
    private static final int TASKS = 8;
    private static final int RECORDS_PER_TASK = 2000;
    private static final int BATCH = 100;
    private static final long LAST_ID = 100_000_000;
    /** Hadoop 3.4's Guice-based web apps on Java 17, as in the failsafe argLine. */
    private static final String JAVA_OPENS = "--add-opens java.base/java.lang=ALL-UNNAMED";
    private static final String JOB_CLASS_LOADER = "org.apache.hadoop.util.ApplicationClassLoader";

    private static final Path FIGURES = Paths.get("target", "yarn-job-figures.txt");
    /** Each run's attempt journals, kept for a look after the build. */
    private static final Path JOURNALS = Paths.get("target", "yarn-journals").toAbsolutePath();

    @TempDir
    static Path dir;
    private static LoopbackZooKeeper zk;
    /**
     * The tasks' native library cache ({@code zooid.native.cache}), new for each run of this test:
     * the first job's tasks find it empty (a cold start), the later jobs' find the library there.
     */
    private static Path nativeCache;
    private static MiniDFSCluster hdfs;
    private static MiniMRYarnCluster cluster;

    @BeforeAll
    static void startCluster() throws Exception {
        Files.deleteIfExists(FIGURES);
        if (Files.exists(JOURNALS)) {
            try (Stream<Path> paths = Files.walk(JOURNALS)) {
                paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        zk = LoopbackZooKeeper.start(dir.resolve("zookeeper"));
        Configuration conf = new YarnConfiguration();
        // HDFS, as on a cluster: -libjars copies the local jars into the job's staging directory
        // there (with the local file system as the cluster's, Hadoop skips that copy and the
        // libjars directory the tasks localise is empty).
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dir.resolve("hdfs").toString());
        hdfs = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
        conf.set(CommonConfigurationKeysPublic.FS_DEFAULT_NAME_KEY, hdfs.getFileSystem().getUri().toString());
        conf.set(MRJobConfig.MR_AM_STAGING_DIR, "/apps_staging_dir");
        // A full disk (shared build machines) must not mark the NodeManagers unhealthy.
        conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
        // 5 GB a node: neither node holds all eight 1 GB map containers, so both run tasks.
        conf.setInt(YarnConfiguration.NM_PMEM_MB, 5 * 1024);
        conf.setInt(MRJobConfig.MR_AM_VMEM_MB, 1024);
        conf.set(MRJobConfig.MR_AM_COMMAND_OPTS, "-Xmx384m " + JAVA_OPENS);
        conf.setInt(MRJobConfig.MAP_MEMORY_MB, 1024);
        nativeCache = dir.resolve("native-cache");
        conf.set(MRJobConfig.MAP_JAVA_OPTS, "-Xmx256m " + JAVA_OPENS + " -Dzooid.native.cache=" + nativeCache);
        cluster = new MiniMRYarnCluster(AssignIdsOnYarnIT.class.getSimpleName(), 2);
        cluster.init(conf);
        cluster.start();
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.stop();
        }
        if (hdfs != null) {
            hdfs.shutdown();
        }
        if (zk != null) {
            zk.close();
        }
    }

    @Test
    void eightTasksWithoutTheJobClassLoader() throws Exception {
        Run run = run("plain", false, false, Collections.emptyMap());
        run.expectAttempts(TASKS, 0, 0);
        assertEquals(0, run.leaked.size(), "no attempt lost: nothing leaked");
    }

    @Test
    void eightTasksWithTheJobClassLoader() throws Exception {
        Run run = run("classloader", true, false, Collections.emptyMap());
        run.expectAttempts(TASKS, 0, 0);
        assertEquals(0, run.leaked.size(), "no attempt lost: nothing leaked");
    }

    /**
     * Attempt 0 of task 3 takes IDs, writes 500 records and fails; attempt 1 redoes the task. The
     * 500 IDs it handed out are leaked (its output is discarded, and nothing pushes them back);
     * what its source still held went back in its cleanup().
     */
    @Test
    void aFailedAttemptLeaksOnlyTheIdsItHandedOut() throws Exception {
        Map<String, String> faults = new HashMap<>();
        faults.put(JournalingMapper.FAIL_TASK, "3");
        faults.put(JournalingMapper.FAIL_AFTER, "500");
        Run run = run("retry", true, false, faults);
        run.expectAttempts(TASKS + 1, 1, 0);
        List<AttemptJournal> attempts = run.attemptsOf(3);
        assertEquals(2, attempts.size(), "task 3 ran twice: " + attempts);
        AttemptJournal failed = attempts.get(0);
        assertEquals(0, failed.attempt.getId());
        assertEquals(AttemptJournal.End.FAILED, failed.end, "attempt 0 failed: " + failed);
        assertTrue(failed.cleanedUp, "and its cleanup() ran: " + failed);
        assertEquals(500, failed.ids.size());
        assertEquals(new TreeSet<>(failed.ids), run.leaked, "exactly the failed attempt's records' IDs are leaked");
        assertEquals(0, run.heldByUncleanedAttempts, "the failed attempt pushed back what it held");
    }

    /**
     * Attempt 0 of task 5 is slow, so speculative execution starts attempt 1 of it; the first to
     * finish commits and YARN kills the other's container (SIGTERM, then SIGKILL). The IDs the
     * loser gave to records are leaked; what its source held unused goes back if its cleanup()
     * pushes it back before the SIGKILL, and is leaked otherwise (both are checked in {@link Run}).
     */
    @Test
    void aKilledSpeculativeAttemptLeaksWhatItTookAndNothingIsReused() throws Exception {
        Map<String, String> faults = new HashMap<>();
        faults.put(JournalingMapper.STRAGGLE_TASK, "5");
        faults.put(JournalingMapper.STRAGGLE_MS, "40");
        Run run = run("speculative", false, true, faults);
        // The guard that speculation happened: more attempts than tasks, and below, task 5 ran
        // twice with one attempt stopped while it ran. The job's killed-maps counter is not a
        // guard: a loser stopped when the winner commits is often not counted there (seen:
        // "9 launched / 0 failed / 0 killed" with attempt 0 of task 5 cut in its cleanup()).
        assertTrue(run.launched > TASKS,
                "a speculative attempt ran: " + run.launched + " launched, " + run.killed + " killed");
        List<AttemptJournal> attempts = run.attemptsOf(5);
        assertTrue(attempts.size() >= 2, "task 5 ran twice: " + attempts);
        AttemptJournal loser = attempts.stream()
                .filter(a -> !a.attempt.equals(run.committed.get(5)))
                .filter(a -> !a.ids.isEmpty())
                .findFirst()
                .orElseThrow(() -> new AssertionError("no attempt of task 5 lost after handing out IDs: " + attempts));
        assertTrue(loser.end != AttemptJournal.End.END, "the loser was stopped while it ran: " + loser);
        assertTrue(run.leaked.containsAll(loser.ids) && loser.ids.size() < RECORDS_PER_TASK,
                "the IDs it gave to records are leaked: " + loser);
    }

    /** Runs the job and checks everything every run must satisfy. */
    private static Run run(String name, boolean jobClassLoader, boolean speculative, Map<String, String> faults)
            throws Exception {
        IDCategory category = new IDCategory("/it/" + name);
        try (IDGeneratorService service = IDGeneratorService.open(zk.connect())) {
            service.createCategory(category, CategorySpec.of(1, LAST_ID));
        }
        FileSystem fs = hdfs.getFileSystem();
        org.apache.hadoop.fs.Path input = new org.apache.hadoop.fs.Path("/" + name + "/input");
        org.apache.hadoop.fs.Path output = new org.apache.hadoop.fs.Path("/" + name + "/output");
        Set<String> records = new HashSet<>();
        for (int f = 0; f < TASKS; f++) {
            org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(input, "events-" + f + ".txt");
            try (BufferedWriter out = new BufferedWriter(new OutputStreamWriter(fs.create(file), StandardCharsets.UTF_8))) {
                for (int r = 0; r < RECORDS_PER_TASK; r++) {
                    String record = name + " event " + f + "/" + r;
                    out.write(record);
                    out.newLine();
                    records.add(record);
                }
            }
        }
        Path journals = Files.createDirectories(JOURNALS.resolve(name));

        Configuration conf = new Configuration(cluster.getConfig());
        conf.setBoolean(MRJobConfig.MAPREDUCE_JOB_CLASSLOADER, jobClassLoader);
        conf.setBoolean(MRJobConfig.MAP_SPECULATIVE, speculative);
        // A mini cluster hands the test's own classpath (zooid included) to every container;
        // a real cluster has Hadoop only, and the job brings the rest.
        conf.setBoolean(YarnConfiguration.IS_MINI_YARN_CLUSTER, false);
        conf.setStrings(MRJobConfig.MAPREDUCE_APPLICATION_CLASSPATH, ClusterClasspath.withoutZooid().toArray(new String[0]));
        conf.set(AssignIdsJob.CONNECT, zk.connect());
        conf.set(AssignIdsJob.CATEGORY, category.getName());
        conf.setInt(AssignIdsJob.BATCH_SIZE, BATCH);
        conf.set(JournalingMapper.JOURNAL_DIR, journals.toString());
        faults.forEach(conf::set);
        String libjars = jarOf(IDGeneratorService.class) + "," + jarOf(JournalingMapper.class);
        String[] args = new GenericOptionsParser(conf, new String[] {"-libjars", libjars, input.toString(), output.toString()})
                .getRemainingArgs();
        AssignIdsJob tool = new AssignIdsJob();
        tool.setConf(conf);
        Job job = tool.createJob(args[0], args[1]);
        job.setMapperClass(JournalingMapper.class);
        assertEquals(jarOf(AssignIdsJob.class), job.getJar(), "the example jar is the job jar");

        long start = System.nanoTime();
        assertTrue(job.waitForCompletion(false), name + ": the job succeeded");
        double seconds = (System.nanoTime() - start) / 1e9;
        return new Run(name, jobClassLoader, job, records, output, journals, category, seconds);
    }

    /** The jar a class was loaded from; the tests ship jars, so run them after {@code package}. */
    private static String jarOf(Class<?> type) throws URISyntaxException {
        File file = new File(type.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertTrue(file.isFile() && file.getName().endsWith(".jar"),
                type.getName() + " must come from a jar (run `mvn verify`), not " + file);
        return file.getPath();
    }

    /** One finished job and what was checked about it. */
    private static final class Run {
        final List<AttemptJournal> journals = new ArrayList<>();
        /** The successful attempt of each task. */
        final Map<Integer, TaskAttemptID> committed = new TreeMap<>();
        /** IDs handed out by attempts whose output was discarded. */
        final TreeSet<Long> leaked = new TreeSet<>();
        /** IDs taken from the pool but neither handed out nor pushed back. */
        final long heldByUncleanedAttempts;
        final long launched;
        final long failed;
        final long killed;

        Run(String name, boolean jobClassLoader, Job job, Set<String> records, org.apache.hadoop.fs.Path output, Path journalDir,
                IDCategory category, double seconds) throws Exception {
            Counters counters = job.getCounters();
            launched = counters.findCounter(JobCounter.TOTAL_LAUNCHED_MAPS).getValue();
            failed = counters.findCounter(JobCounter.NUM_FAILED_MAPS).getValue();
            killed = counters.findCounter(JobCounter.NUM_KILLED_MAPS).getValue();
            assertEquals(records.size(), counters.findCounter(AssignIdsMapper.Ids.ASSIGNED).getValue());

            // One ID per record, every record once, no ID twice.
            Map<Integer, List<Long>> outputIds = new TreeMap<>();
            Set<Long> assigned = new HashSet<>();
            Set<String> seen = new HashSet<>();
            for (int task = 0; task < TASKS; task++) {
                org.apache.hadoop.fs.Path part = new org.apache.hadoop.fs.Path(output, String.format("part-m-%05d", task));
                List<Long> ids = new ArrayList<>();
                for (String line : readLines(part)) {
                    String[] fields = line.split("\t", 2);
                    long id = Long.parseLong(fields[0]);
                    assertTrue(assigned.add(id), name + ": ID " + id + " assigned twice");
                    assertTrue(records.contains(fields[1]), name + ": unknown record " + fields[1]);
                    assertTrue(seen.add(fields[1]), name + ": record " + fields[1] + " written twice");
                    ids.add(id);
                }
                outputIds.put(task, ids);
            }
            assertEquals(records.size(), seen.size(), name + ": every record has an ID");

            // Every attempt, wherever it ran and however it ended, loaded zooid from the shipped
            // jar, extracted the native library from it, and handed out IDs no other did.
            try (Stream<Path> files = Files.list(journalDir)) {
                for (Path file : files.sorted().collect(Collectors.toList())) {
                    journals.add(AttemptJournal.read(file));
                }
            }
            Set<Long> handedOut = new HashSet<>();
            Set<String> nodes = new TreeSet<>();
            for (AttemptJournal attempt : journals) {
                for (long id : attempt.ids) {
                    assertTrue(handedOut.add(id), name + ": ID " + id + " handed out twice, again by " + attempt);
                }
                if (attempt.ids.isEmpty()) {
                    continue; // stopped before its first record: it wrote no facts
                }
                nodes.add(attempt.facts.get("node"));
                assertEquals(jobClassLoader ? JOB_CLASS_LOADER : "system", attempt.facts.get("loader"), attempt.toString());
                String jar = attempt.facts.get("jar");
                assertNotNull(jar, attempt.toString());
                assertFalse(jar.contains("/.m2/") || jar.contains("/zooid/target/"), "zooid not from the job's jar: " + attempt);
                assertTrue(jar.contains("/usercache/"), "zooid from the -libjars jar the NodeManager localised: " + attempt);
                assertTrue(attempt.facts.get("library").contains("the jar (/native/"), "the library from the jar: " + attempt);
                assertTrue(attempt.facts.get("library").contains("the cache: " + nativeCache + "/"),
                        "the library from the node's cache: " + attempt);
            }
            assertTrue(nodes.size() >= 2, name + ": tasks ran on both NodeManagers: " + nodes);

            // Each task's output is what its successful attempt handed out, in order; the IDs of
            // the other attempts are in no output.
            for (TaskReport report : job.getTaskReports(TaskType.MAP)) {
                committed.put(report.getTaskID().getId(), report.getSuccessfulTaskAttemptId());
            }
            assertEquals(TASKS, committed.size());
            for (AttemptJournal attempt : journals) {
                int task = attempt.attempt.getTaskID().getId();
                if (attempt.attempt.equals(committed.get(task))) {
                    assertTrue(attempt.end == AttemptJournal.End.END && attempt.cleanedUp, attempt.toString());
                    assertEquals(outputIds.get(task), attempt.ids, name + ": output of task " + task + " is its attempt's");
                } else {
                    for (long id : attempt.ids) {
                        assertFalse(assigned.contains(id), name + ": ID " + id + " of lost " + attempt + " in the output");
                        leaked.add(id);
                    }
                }
            }
            for (int task = 0; task < TASKS; task++) {
                final int t = task;
                assertTrue(journals.stream().anyMatch(a -> a.attempt.equals(committed.get(t))), "journal of task " + task);
            }

            // The pool: no handed-out ID is free again; every ID taken is handed out, or held by an
            // attempt whose container was stopped (leaked with it).
            long free;
            try (IDGeneratorService service = IDGeneratorService.open(zk.connect())) {
                PoolInfo pool = service.getPoolInfo(category);
                free = pool.countFreeIDs();
                TreeSet<Long> sorted = new TreeSet<>(handedOut);
                for (IDRange range : pool.getFreeRanges()) {
                    assertTrue(sorted.subSet(range.getStartID(), true, range.getEndID(), true).isEmpty(),
                            name + ": a handed-out ID is free again in " + range);
                }
            }
            long taken = LAST_ID - free;
            heldByUncleanedAttempts = taken - handedOut.size();
            if (journals.stream().anyMatch(a -> !a.cleanedUp)) {
                assertTrue(heldByUncleanedAttempts >= 0, name + ": taken " + taken + ", handed out " + handedOut.size());
            } else {
                assertEquals(0, heldByUncleanedAttempts, name + ": every ID taken was handed out or pushed back");
            }
            report(name, jobClassLoader, job, seconds, nodes.size(), records.size());
        }

        /** The attempts that did not commit: {@code attempt end-state IDs-handed-out}. */
        String lostAttempts() {
            return journals.stream()
                    .filter(a -> !a.attempt.equals(committed.get(a.attempt.getTaskID().getId())))
                    .map(a -> a.attempt + " " + a.end + (a.cleanedUp ? " after cleanup" : a.cleanupBegan ? " in cleanup" : "")
                            + ", " + a.ids.size() + " IDs" + (a.facts.containsKey("cause") ? ", " + abbreviate(a.facts.get("cause")) : ""))
                    .collect(Collectors.joining(", ", "[", "]"));
        }

        private static String abbreviate(String text) {
            return text.length() <= 160 ? text : text.substring(0, 160) + "...";
        }

        List<AttemptJournal> attemptsOf(int task) {
            return journals.stream().filter(a -> a.attempt.getTaskID().getId() == task).collect(Collectors.toList());
        }

        void expectAttempts(long launchedMaps, long failedMaps, long killedMaps) {
            assertEquals(launchedMaps, launched, "map attempts launched");
            assertEquals(failedMaps, failed, "map attempts failed");
            assertEquals(killedMaps, killed, "map attempts killed");
            assertEquals(launchedMaps, journals.size(), "every attempt kept a journal");
        }

        private void report(String name, boolean jobClassLoader, Job job, double seconds, int nodes, int records)
                throws IOException, InterruptedException {
            List<Long> load = new ArrayList<>();
            List<Long> open = new ArrayList<>();
            for (TaskReport report : job.getTaskReports(TaskType.MAP)) {
                long loadMs = report.getTaskCounters().findCounter(AssignIdsMapper.Ids.NATIVE_LOAD_MS).getValue();
                assertTrue(loadMs > 0, name + ": " + report.getTaskID() + " counted NATIVE_LOAD_MS");
                load.add(loadMs);
                open.add(report.getTaskCounters().findCounter(AssignIdsMapper.Ids.OPEN_MS).getValue());
            }
            long extracted = journals.stream()
                    .filter(a -> a.facts.getOrDefault("library", "").contains("extracted to the cache: "))
                    .count();
            long reused = journals.stream()
                    .filter(a -> a.facts.getOrDefault("library", "").contains("from the cache: "))
                    .count();
            String line = String.format("%-12s classloader=%-5s wall %5.1f s, %d tasks on %d nodes, attempts %d launched"
                    + " / %d failed / %d killed, %d records, %d IDs leaked by lost attempts' records, %d held by attempts"
                    + " stopped before their cleanup(); per task native library load ms %s (NATIVE_LOAD_MS min/median/max;"
                    + " library extracted to the cache by %d attempts, found there by %d), open ms %s; %s; lost attempts: %s%n",
                    name, jobClassLoader, seconds, TASKS, nodes, launched, failed, killed, records, leaked.size(),
                    heldByUncleanedAttempts, spread(load), extracted, reused, spread(open), AssignIdsJob.startUpSummary(job),
                    lostAttempts());
            System.out.print(line);
            Files.write(FIGURES, line.getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }

        private static List<String> readLines(org.apache.hadoop.fs.Path file) throws IOException {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(hdfs.getFileSystem().open(file), StandardCharsets.UTF_8))) {
                return in.lines().collect(Collectors.toList());
            }
        }

        /** {@code min/median/max} of the values. */
        private static String spread(List<Long> values) {
            List<Long> sorted = new ArrayList<>(values);
            Collections.sort(sorted);
            return sorted.get(0) + "/" + sorted.get(sorted.size() / 2) + "/" + sorted.get(sorted.size() - 1);
        }
    }
}
