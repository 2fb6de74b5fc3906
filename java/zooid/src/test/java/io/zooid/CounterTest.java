package io.zooid;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The CAS counter (seed 000) from Java, on a real ZooKeeper, and the seed's own code on its node. */
class CounterTest {
    private static final AtomicInteger NEXT = new AtomicInteger();

    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    static String freshPath() {
        return "/zooid-java-test/counter/c" + NEXT.incrementAndGet();
    }

    /** The seed's getNextId() (ByteBuffer getLong / putLong, setData with the read version). */
    static long seedNextId(ZooKeeper client, String path) throws Exception {
        while (true) {
            Stat stat = new Stat();
            byte[] data = client.getData(path, false, stat);
            ByteBuffer buf = ByteBuffer.wrap(data);
            long value = buf.getLong();
            value++;
            buf.rewind();
            buf.putLong(value);
            try {
                client.setData(path, buf.array(), stat.getVersion());
                return value;
            } catch (org.apache.zookeeper.KeeperException.BadVersionException e) {
                // Someone else moved it: read again.
            }
        }
    }

    @Test
    void initNextAndGet() throws Exception {
        String path = freshPath();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString());
                Counter counter = service.counter(path)) {
            assertEquals(path, counter.getPath());
            counter.init(41);
            assertEquals(42, counter.next());
            IDRange range = counter.next(10);
            assertEquals(43, range.getStartID());
            assertEquals(52, range.getEndID());
            assertEquals(10, range.countIDs());
            assertEquals(52, counter.get());

            assertThrows(IllegalArgumentException.class, () -> counter.next(0));
            assertThrows(IllegalArgumentException.class, () -> counter.next(-3));
            assertThrows(CategoryExistsException.class, () -> counter.init(0));
            assertEquals(52, counter.get(), "a refused init leaves the node untouched");
        }
    }

    @Test
    void theSeedsNodeAndTheSeedsCodeInterleave() throws Exception {
        String path = freshPath();
        try (ZooKeeper client = zk.client();
                IDGeneratorService service = IDGeneratorService.open(zk.connectString());
                Counter counter = service.counter(path)) {
            // The node as the seed's deployment has it: created by the Java client.
            for (String parent : new String[] {"/zooid-java-test", "/zooid-java-test/counter"}) {
                try {
                    client.create(parent, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                } catch (org.apache.zookeeper.KeeperException.NodeExistsException e) {
                    // Created by an earlier test.
                }
            }
            byte[] initial = ByteBuffer.allocate(8).putLong(0xabcdefL).array();
            client.create(path, initial, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            assertEquals(0xabcdf0L, seedNextId(client, path));
            assertEquals(0xabcdf0L, counter.get());
            IDRange mine = counter.next(5);
            assertEquals(0xabcdf1L, mine.getStartID());
            assertEquals(0xabcdf5L, mine.getEndID());
            // The seed's code reads zooid's writes (the markers are children: getData ignores them).
            assertEquals(0xabcdf6L, seedNextId(client, path));
            byte[] data = client.getData(path, false, null);
            assertEquals(8, data.length);
            assertEquals(0xabcdf6L, ByteBuffer.wrap(data).getLong());
            assertEquals(0xabcdf7L, counter.next());
        }
    }

    @Test
    void badNodesAndMisuse() throws Exception {
        String missing = freshPath();
        String text = freshPath();
        try (ZooKeeper client = zk.client();
                IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            try (Counter counter = service.counter(missing)) {
                assertThrows(CategoryNotFoundException.class, counter::next);
                assertThrows(CategoryNotFoundException.class, counter::get);
            }
            try (Counter counter = service.counter(text)) {
                counter.init(); // creates the parents; then replace the node by text
            }
            client.delete(text, -1);
            byte[] garbage = "1:100\n".getBytes(StandardCharsets.UTF_8);
            client.create(text, garbage, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            try (Counter counter = service.counter(text)) {
                CorruptPoolException e = assertThrows(CorruptPoolException.class, counter::next);
                assertTrue(e.getMessage().contains(text), e.getMessage());
            }
            Stat stat = new Stat();
            assertArrayEquals(garbage, client.getData(text, false, stat));
            assertEquals(0, stat.getVersion(), "never overwritten");

            assertThrows(IllegalArgumentException.class, () -> service.counter("relative"));
            // A path the values' IDCategory refuses is refused before anything is written (a
            // next() wrote, then could not name its values).
            assertThrows(IllegalArgumentException.class, () -> service.counter("/app/zooid-holes"));
            assertThrows(NullPointerException.class, () -> service.counter(null));
            Counter closed = service.counter(missing);
            closed.close();
            closed.close();
            assertThrows(IllegalStateException.class, closed::get);
        }
        try (IDGeneratorService mem = IDGeneratorService.open("mem:")) {
            assertThrows(IllegalArgumentException.class, () -> mem.counter("/c"));
        }
    }

    @Test
    void threadsNeverShareAValue() throws Exception {
        String path = freshPath();
        int threads = 4;
        int calls = 50;
        Set<Long> seen = ConcurrentHashMap.newKeySet();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            try (Counter counter = service.counter(path)) {
                counter.init(0);
            }
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<Integer>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    futures.add(pool.submit(() -> {
                        int got = 0;
                        try (Counter counter = service.counter(path)) {
                            for (int i = 0; i < calls; i++) {
                                IDRange range = counter.next(1 + i % 3);
                                for (long v = range.getStartID(); v <= range.getEndID(); v++) {
                                    assertTrue(seen.add(v), "value " + v + " handed out twice");
                                    got++;
                                }
                            }
                        }
                        return got;
                    }));
                }
                int total = 0;
                for (Future<Integer> f : futures) {
                    total += f.get(60, TimeUnit.SECONDS);
                }
                try (Counter counter = service.counter(path)) {
                    assertEquals(total, counter.get(), "every value up to the counter was handed out once");
                }
            } finally {
                pool.shutdownNow();
            }
        }
    }
}
