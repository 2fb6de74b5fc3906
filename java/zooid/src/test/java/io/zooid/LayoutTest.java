package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Pool layouts chosen from Java: {@link CategorySpec#layout(Layout, long)} writes each layout's format (read raw with a ZooKeeper client), the default on
 * ZooKeeper is hole nodes (format 4), takes and pushes work the same in every layout, and
 * {@link IDGeneratorService#migrateCategory} moves a single node to hole nodes in place.
 */
class LayoutTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    private static final String PREFIX = "/zooid-java-test/layout/";

    /** The pool node as stored: its text and its stat. */
    private static String raw(ZooKeeper client, IDCategory cat, Stat stat) throws Exception {
        return new String(client.getData(cat.getName(), false, stat), StandardCharsets.UTF_8);
    }

    /** A take of 10 gets 1-10; its last 5 are pushed back; a take of 10 gets 6-15. */
    private static void takePushTake(IDGeneratorService service, IDCategory cat) throws Exception {
        IDSet first = service.takeIDs(cat, 10);
        assertEquals(cat.getName() + " [1:10]", first.toString());
        for (long id = 1; id <= 5; id++) {
            assertEquals(id, first.takeID());
        }
        service.pushIDs(first);
        assertFalse(first.hasMoreIDs());
        IDSet second = service.takeIDs(cat, 10);
        for (long id = 6; id <= 15; id++) {
            assertEquals(id, second.takeID(), "the pushed IDs first, lowest first");
        }
        assertFalse(second.hasMoreIDs());
    }

    @Test
    void eachLayoutWritesItsFormatAndTheDefaultIsHoleNodes() throws Exception {
        Object[][] cases = {
            {"single", Layout.SINGLE_NODE, 0L, "#zooid 1\n"},
            {"holes", Layout.HOLE_NODES, 0L, "#zooid 4\n"},
            {"default", null, 0L, "#zooid 4\n"},
        };
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString());
                ZooKeeper client = zk.client()) {
            for (Object[] c : cases) {
                IDCategory cat = new IDCategory(PREFIX + c[0]);
                Layout layout = (Layout) c[1];
                if (layout == null) {
                    service.createCategory(cat, CategorySpec.of(1, 1_000_000));
                } else {
                    service.createCategory(cat, CategorySpec.of(1, 1_000_000).layout(layout, (Long) c[2]));
                }
                Stat created = new Stat();
                String text = raw(client, cat, created);
                assertTrue(text.startsWith((String) c[3]), c[0] + ": " + text);
                assertThrows(CategoryExistsException.class,
                        () -> service.createCategory(cat, CategorySpec.of(1, 1_000_000).layout(Layout.SINGLE_NODE, 0)));

                takePushTake(service, cat);

                Stat after = new Stat();
                raw(client, cat, after);
                assertEquals(after.getVersion(), service.getPoolInfo(cat).getVersion());
                if (layout == Layout.SINGLE_NODE) {
                    assertEquals(created.getVersion() + 3, after.getVersion(),
                            "the single node is written by the take, the push and the take");
                } else {
                    assertEquals(created.getVersion(), after.getVersion(),
                            c[0] + ": takes claim blocks and holes, pushes create holes: the pool node stays");
                }
            }
        }
    }

    @Test
    void migrateMovesASingleNodeToHoleNodesInPlace() throws Exception {
        IDCategory cat = new IDCategory(PREFIX + "moved");
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString());
                ZooKeeper client = zk.client()) {
            service.createCategory(cat, CategorySpec.of(1, 1_000_000).layout(Layout.SINGLE_NODE, 0));
            assertEquals(10, service.takeIDs(cat, 10).countIDs());
            assertThrows(IllegalArgumentException.class,
                    () -> service.migrateCategory(cat, Layout.SINGLE_NODE, 0), "no way back");
            assertTrue(raw(client, cat, null).startsWith("#zooid 1\n"));

            Migration moved = service.migrateCategory(cat, Layout.HOLE_NODES, 0);
            assertTrue(moved.isMoved(), moved.toString());
            assertEquals(1, moved.getFromFormat());
            assertEquals(4, moved.getToFormat());
            assertEquals(11, moved.getBase());
            assertTrue(raw(client, cat, null).startsWith("#zooid 4\n"));

            Migration again = service.migrateCategory(cat, Layout.HOLE_NODES, 0);
            assertFalse(again.isMoved(), again.toString());
            assertEquals(4, again.getToFormat());
            IDSet next = service.takeIDs(cat, 10);
            assertEquals(cat.getName() + " [11:20]", next.toString());
        }
    }

    @Test
    void badArgumentsAndTheEmbeddedStores() throws Exception {
        IDCategory cat = new IDCategory("/layout");
        try (IDGeneratorService mem = IDGeneratorService.open("mem:")) {
            assertThrows(NullPointerException.class, () -> mem.createCategory(cat, CategorySpec.of(1, 10).layout(null, 0)));
            assertThrows(IllegalArgumentException.class,
                    () -> mem.createCategory(cat, CategorySpec.of(1, 10).layout(Layout.HOLE_NODES, -1)));
            assertThrows(IllegalArgumentException.class,
                    () -> mem.createCategory(cat, CategorySpec.of(1, 10).layout(Layout.HOLE_NODES, 1L << 31)));
            assertThrows(IllegalArgumentException.class, () -> mem.createCategory(cat, CategorySpec.of(0, 10).layout(Layout.SINGLE_NODE, 0)));
            // Hole nodes need ZooKeeper; nothing is created.
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> mem.createCategory(cat, CategorySpec.of(1, 10).layout(Layout.HOLE_NODES, 0)));
            assertTrue(e.getMessage().contains("ZooKeeper"), e.getMessage());
            assertThrows(CategoryNotFoundException.class, () -> mem.getPoolInfo(cat));
            assertThrows(IllegalArgumentException.class, () -> mem.migrateCategory(cat, Layout.HOLE_NODES, 0));
            mem.createCategory(cat, CategorySpec.of(1, 100).layout(Layout.SINGLE_NODE, 0));
            takePushTake(mem, cat);
            assertEquals(3, mem.getPoolInfo(cat).getVersion());
        }
    }
}
