package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Opening, the basic operations, the embedded stores, misuse and close semantics. */
class ServiceTest {
    private static final AtomicInteger NEXT = new AtomicInteger();

    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    static IDCategory freshCategory() {
        return new IDCategory("/zooid-java-test/service/c" + NEXT.incrementAndGet());
    }

    @Test
    void takePushAndPoolInfoOnZooKeeper() throws Exception {
        IDCategory cat = freshCategory();
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            service.createCategory(cat, CategorySpec.of(100, 199));
            PoolInfo fresh = service.getPoolInfo(cat);
            assertEquals(100, fresh.getFirstID());
            assertEquals(199, fresh.getLastID());
            assertEquals(100, fresh.countFreeIDs());
            assertFalse(fresh.isLegacy());
            assertTrue(fresh.getSizeBytes() > 0);

            IDSet ids = service.takeIDs(cat, 30);
            assertEquals(cat, ids.getCategory());
            assertEquals(30, ids.countIDs());
            assertEquals(100, ids.takeID());
            assertEquals(101, ids.takeID());
            service.pushIDs(ids);
            assertFalse(ids.hasMoreIDs(), "a push empties the set");
            // A push consumes the set: a second one is refused, nothing is pushed again.
            assertThrows(IllegalStateException.class, () -> service.pushIDs(ids));

            PoolInfo after = service.getPoolInfo(cat);
            assertEquals(98, after.countFreeIDs());
            assertEquals("[102:199]", after.getFreeRanges().toString());
            // The default on ZooKeeper is hole nodes: the take claimed a block, the push made a
            // hole, and neither wrote the pool node (LayoutTest covers the single node).
            assertEquals(fresh.getVersion(), after.getVersion());

            IDSet rest = service.takeIDs(cat, 1000);
            assertEquals(98, rest.countIDs(), "a take gets what is left when less than asked");
            assertThrows(IDsExhaustedException.class, () -> service.takeIDs(cat, 1));
        }
    }

    @Test
    void chrootedConnectStringAndSessionOptions() throws Exception {
        IDCategory cat = new IDCategory("/chrooted");
        IDGeneratorOptions options = new IDGeneratorOptions()
                .sessionTimeout(Duration.ofSeconds(6))
                .operationTimeout(Duration.ofSeconds(20))
                .maxAttempts(50)
                .maxPoolBytes(64 * 1024);
        try (org.apache.zookeeper.ZooKeeper client = zk.client()) {
            // ZooKeeper requires the chroot node to exist.
            client.create("/zooid-java-chroot", new byte[0],
                    org.apache.zookeeper.ZooDefs.Ids.OPEN_ACL_UNSAFE, org.apache.zookeeper.CreateMode.PERSISTENT);
        }
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString() + "/zooid-java-chroot", options)) {
            service.createCategory(cat, CategorySpec.of(1, 10));
            assertEquals(1, service.takeIDs(cat, 1).takeID());
        }
        try (org.apache.zookeeper.ZooKeeper client = zk.client()) {
            assertTrue(client.exists("/zooid-java-chroot/chrooted", false) != null, "the node lives under the chroot");
        }
    }

    @Test
    void embeddedMemoryAndFileStores(@TempDir Path dir) throws Exception {
        IDCategory cat = new IDCategory("/embedded");
        try (IDGeneratorService mem = IDGeneratorService.open("mem:service-test")) {
            mem.createCategory(cat, CategorySpec.of(1, 5));
            assertEquals(1, mem.takeIDs(cat, 2).takeID());
        }
        try (IDGeneratorService mem = IDGeneratorService.open("mem:service-test")) {
            assertEquals(3, mem.takeIDs(cat, 1).takeID(), "a named memory store outlives one service");
        }
        try (IDGeneratorService file = IDGeneratorService.open("file:" + dir)) {
            file.createCategory(cat, CategorySpec.of(1, 5));
            assertEquals(1, file.takeIDs(cat, 2).takeID());
        }
        try (IDGeneratorService file = IDGeneratorService.open("file:" + dir)) {
            assertEquals(3, file.takeIDs(cat, 1).takeID(), "the file store persists");
        }
        assertTrue(Files.list(dir).findAny().isPresent());
    }

    @Test
    void misuseThrowsStandardRuntimeExceptions() throws Exception {
        IDCategory cat = freshCategory();
        assertThrows(NullPointerException.class, () -> IDGeneratorService.open(null));
        assertThrows(NullPointerException.class, () -> IDGeneratorService.open("mem:", null));
        assertThrows(IllegalArgumentException.class, () -> IDGeneratorService.open(""),
                "an empty ZooKeeper connect string is rejected by the core");
        assertThrows(IllegalArgumentException.class, () -> new IDGeneratorOptions().maxAttempts(0));
        assertThrows(IllegalArgumentException.class, () -> new IDGeneratorOptions().sessionTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> new IDGeneratorOptions().operationTimeout(Duration.ofNanos(10)));
        assertThrows(IllegalArgumentException.class, () -> new IDGeneratorOptions().digestAuth("a:b", "p"));
        assertThrows(IllegalArgumentException.class, () -> new IDGeneratorOptions().maxPoolBytes(0));
        try (IDGeneratorService service = IDGeneratorService.open("mem:")) {
            assertThrows(NullPointerException.class, () -> service.takeIDs(null, 1));
            assertThrows(NullPointerException.class, () -> service.pushIDs(null));
            assertThrows(NullPointerException.class, () -> service.createCategory(null, CategorySpec.of(1, 2)));
            assertThrows(NullPointerException.class, () -> service.getPoolInfo(null));
            assertThrows(IllegalArgumentException.class, () -> service.createCategory(cat, CategorySpec.of(0, 10)));
            assertThrows(IllegalArgumentException.class, () -> service.createCategory(cat, CategorySpec.of(10, 9)));
            service.createCategory(cat, CategorySpec.of(1, 10));
            assertThrows(IllegalArgumentException.class, () -> service.takeIDs(cat, 0));
            assertThrows(IllegalArgumentException.class, () -> service.takeIDs(cat, -5));
        }
    }

    /**
     * close() closes the ZooKeeper session on the server at once, after takes and pushes in
     * every layout (issue 22: a long-running JVM must not leak sessions). The server's own
     * session count is the measure; the session timeout is the server's maximum (10 s), so
     * expiry cannot pass for a close.
     */
    @Test
    void closeClosesTheSessionOnTheServer() throws Exception {
        for (Layout layout : new Layout[] {null, Layout.SINGLE_NODE, Layout.HOLE_NODES}) {
            long before = zk.sessionCount();
            IDCategory cat = freshCategory();
            IDGeneratorService service = IDGeneratorService.open(
                    zk.connectString(), new IDGeneratorOptions().sessionTimeout(Duration.ofSeconds(10)));
            if (layout == Layout.HOLE_NODES) {
                service.createCategory(cat, CategorySpec.of(1, 1_000_000).blocks(1_000));
            } else if (layout != null) {
                service.createCategory(cat, CategorySpec.of(1, 1_000_000).layout(layout, 0));
            } else {
                service.createCategory(cat, CategorySpec.of(1, 1_000_000));
            }
            for (int round = 0; round < 5; round++) {
                IDSet ids = service.takeIDs(cat, 1_000);
                for (int i = 0; i < 900; i++) {
                    ids.takeID();
                }
                service.pushIDs(ids); // a task's leftovers
            }
            assertEquals(before + 1, zk.sessionCount(), "guard: the service's session is open");
            service.close();
            long deadline = System.nanoTime() + Duration.ofMillis(500).toNanos();
            while (zk.sessionCount() != before && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(before, zk.sessionCount(),
                    (layout == null ? "default" : layout.toString()) + ": session still open after close()");
        }
    }

    @Test
    void closeIsIdempotentAndUseAfterCloseThrowsIllegalState() throws Exception {
        IDCategory cat = freshCategory();
        IDGeneratorService service = IDGeneratorService.open(zk.connectString());
        service.createCategory(cat, CategorySpec.of(1, 100));
        IDSet ids = service.takeIDs(cat, 10);
        assertFalse(service.isClosed());
        service.close();
        assertTrue(service.isClosed());
        service.close();
        assertThrows(IllegalStateException.class, () -> service.takeIDs(cat, 1));
        assertThrows(IllegalStateException.class, () -> service.pushIDs(ids));
        assertThrows(IllegalStateException.class, () -> service.createCategory(freshCategory(), CategorySpec.of(1, 2)));
        assertThrows(IllegalStateException.class, () -> service.getPoolInfo(cat));
        assertEquals(10, ids.countIDs(), "a failed push keeps the IDs");
        assertTrue(service.toString().contains("closed"));

        // The IDs were not lost: another service can still push them back.
        try (IDGeneratorService other = IDGeneratorService.open(zk.connectString())) {
            other.pushIDs(ids);
            assertEquals(100, other.getPoolInfo(cat).countFreeIDs());
        }
    }

    @Test
    void nativeLibraryReportsItsVersionAndOrigin() {
        String info = IDGeneratorService.nativeLibraryInfo();
        assertTrue(info.startsWith("zooid 0."), info);
        // Extracted (to the cache, or to a private file), or found in the cache from an earlier run.
        assertTrue(info.contains("the jar (/native/") && (info.contains("extracted to") || info.contains("from the cache: ")),
                "loaded from the bundled copy: " + info);
    }
}
