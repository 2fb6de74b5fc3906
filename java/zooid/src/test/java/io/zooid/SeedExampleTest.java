package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The worked example of the design document, against a real ZooKeeper server. */
class SeedExampleTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    @Test
    void threeTasksRecycleTheirLeftoversAndTheNextTakeFillsTheHolesFirst() throws Exception {
        IDCategory did = new IDCategory("/com/demdex/eventpublish/idgen/did");
        try (IDGeneratorService service = IDGeneratorService.open(zk.connectString())) {
            service.createCategory(did, CategorySpec.of(1, 123456789));

            // Three map/reduce tasks take 10000 IDs each...
            List<IDSet> tasks = new ArrayList<>();
            for (int task = 0; task < 3; task++) {
                tasks.add(service.takeIDs(did, 10000));
            }
            assertEquals("[1:10000]", rangesOf(tasks.get(0)));
            assertEquals("[10001:20000]", rangesOf(tasks.get(1)));
            assertEquals("[20001:30000]", rangesOf(tasks.get(2)));
            assertEquals("[30001:123456789]", service.getPoolInfo(did).getFreeRanges().toString());

            // ...each uses 9000 of them and pushes back its last 1000.
            for (int task = 0; task < 3; task++) {
                IDSet ids = tasks.get(task);
                for (int i = 1; i <= 9000; i++) {
                    assertEquals(task * 10000L + i, ids.takeID());
                }
                service.pushIDs(ids);
                assertFalse(ids.hasMoreIDs());
            }
            assertEquals(
                    "[9001:10000, 19001:20000, 29001:123456789]",
                    service.getPoolInfo(did).getFreeRanges().toString(),
                    "the pool merges 29001:30000 with 30001:123456789, the same IDs as the document's list");

            // The next take of 10000 is the three holes, then 7000 from the rest, in that order.
            IDSet next = service.takeIDs(did, 10000);
            assertEquals(10000, next.countIDs());
            assertEquals("[37001:123456789]", service.getPoolInfo(did).getFreeRanges().toString());
            long[][] expected = {{9001, 10000}, {19001, 20000}, {29001, 30000}, {30001, 37000}};
            for (long[] range : expected) {
                for (long id = range[0]; id <= range[1]; id++) {
                    assertEquals(id, next.takeID());
                }
            }
            assertFalse(next.hasMoreIDs());
            assertEquals(0, next.countIDs());
        }
    }

    private static String rangesOf(IDSet ids) {
        List<String> out = new ArrayList<>();
        for (Iterator<IDRange> it = ids.getRanges(); it.hasNext(); ) {
            out.add(it.next().toString());
        }
        return out.toString();
    }
}
