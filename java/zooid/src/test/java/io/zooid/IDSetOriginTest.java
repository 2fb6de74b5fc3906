package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * A set goes back only to the store it was taken from: pushed through a service on another store
 * holding a category of the same name, its IDs would be freed where that store handed them out.
 */
class IDSetOriginTest {
    private static final IDCategory CAT = new IDCategory("/origin/did");

    @Test
    void aSetIsRefusedByAServiceOnAnotherStoreAndKept() throws Exception {
        try (IDGeneratorService a = IDGeneratorService.open("mem:");
                IDGeneratorService b = IDGeneratorService.open("mem:")) {
            a.createCategory(CAT, CategorySpec.of(1, 100));
            b.createCategory(CAT, CategorySpec.of(1, 100));
            IDSet heldByB = b.takeIDs(CAT, 10);
            IDSet fromA = a.takeIDs(CAT, 10);
            assertEquals(heldByB.getRanges().next().toString(), fromA.getRanges().next().toString(),
                    "guard: the same IDs in both");
            IllegalArgumentException refused =
                    assertThrows(IllegalArgumentException.class, () -> b.pushIDs(fromA));
            assertTrue(refused.getMessage().contains("another store"), refused.getMessage());
            assertEquals(90, b.getPoolInfo(CAT).countFreeIDs(), "b's pool changed");
            a.pushIDs(fromA); // kept, and back where it came from
            assertEquals(100, a.getPoolInfo(CAT).countFreeIDs());
        }
    }
}
