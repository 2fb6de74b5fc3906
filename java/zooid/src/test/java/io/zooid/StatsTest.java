package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** getStats() and the JMX MBean, read through the platform MBeanServer as an operator's tool would. */
class StatsTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    @Test
    void statsCountTakesPushesAndConflictsAndTheMBeanShowsThem() throws Exception {
        IDCategory cat = new IDCategory("/zooid-java-test/stats/did");
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName name;
        try (IDGeneratorService service = IDGeneratorService.open(
                        zk.connectString(), new IDGeneratorOptions().jmxName("stats-test"));
                IDGeneratorService other = IDGeneratorService.open(
                        zk.connectString(), new IDGeneratorOptions().jmx(false))) {
            name = service.getMBeanName();
            assertEquals(
                    new ObjectName("io.zooid:type=IDGeneratorService,name=\"stats-test\""), name);
            assertNull(other.getMBeanName(), "jmx(false) registers nothing");
            assertTrue(server.isRegistered(name));

            // The single node, where every take is a compare-and-set that can conflict.
            service.createCategory(cat, CategorySpec.of(1, 1_000_000).layout(Layout.SINGLE_NODE, 0));
            service.takeIDs(cat, 10);
            other.takeIDs(cat, 5); // this service's remembered version is now stale
            IDSet ids = service.takeIDs(cat, 20);
            service.pushIDs(ids);
            assertThrows(CategoryNotFoundException.class,
                    () -> service.takeIDs(new IDCategory("/zooid-java-test/stats/missing"), 1));

            ServiceStats stats = service.getStats();
            assertEquals(2, stats.getTakes(), stats.toString());
            assertEquals(30, stats.getIDsTaken());
            assertEquals(1, stats.getPushes());
            assertEquals(20, stats.getIDsPushed());
            assertEquals(1, stats.getFailedOperations());
            assertEquals(1, stats.getVersionConflicts());
            assertTrue(stats.getRetries() >= 1);
            assertEquals(0, stats.getLostReplies());
            assertEquals(1, stats.getSessionGeneration());
            assertEquals(0, stats.getSessionLosses());
            assertEquals(4, stats.getLatencyCount(), "takes and pushes, failed ones too");
            assertEquals(4, Arrays.stream(stats.getLatencyBuckets()).sum());
            assertEquals(ServiceStats.LATENCY_BUCKET_BOUNDS_MICROS.length + 1,
                    stats.getLatencyBuckets().length);
            assertTrue(stats.getLatencyMaxMicros() > 0);

            // Through JMX, as jconsole or a JMX exporter reads it.
            assertEquals(2L, server.getAttribute(name, "Takes"));
            assertEquals(30L, server.getAttribute(name, "IDsTaken"));
            assertEquals(1L, server.getAttribute(name, "VersionConflicts"));
            assertEquals(1L, server.getAttribute(name, "SessionGeneration"));
            assertEquals(zk.connectString(), server.getAttribute(name, "ConnectString"));
            assertTrue((Double) server.getAttribute(name, "LatencyMeanMicros") > 0.0);
            service.takeIDs(cat, 1);
            assertEquals(3L, server.getAttribute(name, "Takes"), "attributes are live");

            // A second service under the same name is refused, and the first stays registered.
            IllegalArgumentException clash = assertThrows(IllegalArgumentException.class,
                    () -> IDGeneratorService.open("mem:", new IDGeneratorOptions().jmxName("stats-test")));
            assertTrue(clash.getMessage().contains("jmxName"), clash.getMessage());
            assertTrue(server.isRegistered(name));
        }
        assertFalse(server.isRegistered(name), "close unregisters the MBean");
    }

    @Test
    void defaultNamesAreUniqueAndStatsAfterCloseThrow() throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        IDGeneratorService a = IDGeneratorService.open("mem:");
        IDGeneratorService b = IDGeneratorService.open("mem:");
        ObjectName nameA = a.getMBeanName();
        assertNotNull(nameA);
        assertFalse(nameA.equals(b.getMBeanName()));
        assertTrue(nameA.getKeyProperty("name").startsWith("\"mem:#"), nameA.toString());
        assertEquals(0, a.getStats().getSessionGeneration(), "no session on the embedded stores");
        a.close();
        b.close();
        assertFalse(server.isRegistered(nameA));
        assertThrows(IllegalStateException.class, a::getStats);
        a.close(); // twice: harmless
    }
}
