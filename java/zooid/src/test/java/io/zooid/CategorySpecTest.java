package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Collections;
import org.junit.jupiter.api.Test;

/** {@link CategorySpec}: each field checked when set, and what a spec creates on an embedded store. */
class CategorySpecTest {
    @Test
    void eachFieldIsCheckedWhenSetAndNamedInTheMessage() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> CategorySpec.of(0, 10))
                .getMessage().contains("category bounds 0..10"));
        assertThrows(IllegalArgumentException.class, () -> CategorySpec.of(10, 9));
        CategorySpec spec = CategorySpec.of(1, 100);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> spec.blocks(0))
                .getMessage().contains("block size 0"));
        assertThrows(IllegalArgumentException.class, () -> spec.blocks(1L << 31));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> spec.ceiling(101))
                .getMessage().contains("ceiling 101"));
        assertThrows(IllegalArgumentException.class, () -> spec.ceiling(-1));
        assertThrows(IllegalArgumentException.class, () -> spec.acl(Collections.<ZooKeeperAcl>emptyList()));
        assertThrows(NullPointerException.class, () -> spec.acl(Arrays.asList((ZooKeeperAcl) null)));
        assertThrows(NullPointerException.class, () -> spec.layout(null, 0));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> spec.blocks(10).acl(Arrays.asList(ZooKeeperAcl.worldRead()))).getMessage().startsWith("acl:"));
        assertThrows(IllegalArgumentException.class,
                () -> spec.acl(Arrays.asList(ZooKeeperAcl.worldRead())).blocks(10));

        assertNull(spec.getLayout());
        assertFalse(spec.getCeiling().isPresent());
        assertNull(spec.getAcl());
        CategorySpec full = spec.singleNode().ceiling(100).acl(Arrays.asList(ZooKeeperAcl.worldRead()));
        assertEquals(Layout.SINGLE_NODE, full.getLayout());
        assertEquals(100, full.getCeiling().getAsLong());
        assertEquals("world:anyone:r", full.aclText());
        assertEquals(Layout.HOLE_NODES, spec.blocks(500).getLayout());
        assertEquals(500, spec.blocks(500).getBlockSize());
        assertNull(spec.getLayout(), "a spec is immutable");
    }

    @Test
    void aCeilingHoldsTakesBelowIt() throws Exception {
        IDCategory cat = new IDCategory("/spec/ceiling");
        try (IDGeneratorService mem = IDGeneratorService.open("mem:")) {
            mem.createCategory(cat, CategorySpec.of(1, 100).ceiling(5));
            IDSet ids = mem.takeIDs(cat, 10);
            assertEquals(5, ids.countIDs());
            assertEquals(1, ids.takeID());
            assertThrows(CategoryExistsException.class, () -> mem.createCategory(cat, CategorySpec.of(1, 100)));
            assertThrows(NullPointerException.class, () -> mem.createCategory(cat, null));
            IDCategory other = new IDCategory("/spec/acl");
            IDGeneratorException e = assertThrows(IDGeneratorException.class,
                    () -> mem.createCategory(other, CategorySpec.of(1, 100).acl(Arrays.asList(ZooKeeperAcl.worldRead()))));
            assertEquals(ErrorCode.STORE, e.getCode());
        }
    }
}
