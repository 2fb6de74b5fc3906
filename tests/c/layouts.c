/*
 * Categories in every pool layout through a zooid_category_spec and zooid_service_create_category,
 * and a move to hole nodes through zooid_service_migrate_category.
 *
 *   layouts CONNECT PREFIX
 *
 * Below PREFIX, each with IDs 1..1000000: single (zooid_category_spec_set_single_node), holes
 * (zooid_category_spec_set_blocks, 1000), holes-in (ZOOID_LAYOUT_HOLE_NODES, unit 0: the default
 * block size), default-in (ZOOID_LAYOUT_DEFAULT) and default (a spec with no layout set).
 * On each: a take of 10 gets 1-10, the set's last 5 (6-10) are pushed back, and a take of 10
 * gets 6-15, the pushed IDs first. Then moved: a single node, a take of 10, a move to hole nodes
 * (from format 1 to 4, fresh blocks from 11), the same move again (nothing moved), a take of 10
 * that gets 11-20. Bounds out of order, layout numbers that are not a zooid_layout (2, the retired
 * pool format 3's, included), block sizes of 0 and above 2^31 - 1, a ceiling above the last ID,
 * an ACL with a block layout, NULL arguments and a move back to a single node are refused with
 * ZOOID_STATUS_INVALID_ARGUMENT, creating nothing.
 * The test (tests/c/layouts.rs) reads each pool node's format line.
 *
 *   layouts mem: PREFIX
 *
 * On the embedded store: single, default-in and default as above (a single node each), the
 * hole nodes refused by zooid_service_create_category with ZOOID_STATUS_INVALID_ARGUMENT.
 */
#include "check.h"

/* How take_push_take sets the layout of its spec. */
enum how { NO_LAYOUT, SET_LAYOUT, SET_SINGLE_NODE, SET_BLOCKS };

/* IDs 1..1000000 in `layout` (set as `how` says): take 10, push back 6-10, take 10 again. */
static void take_push_take(const zooid_service *service, const char *category, enum how how,
                           uint32_t layout, uint64_t unit) {
    zooid_category_spec *spec = NULL;
    CHECK_OK(zooid_category_spec_new(1, 1000000, &spec));
    switch (how) {
    case NO_LAYOUT:
        break;
    case SET_LAYOUT:
        CHECK_OK(zooid_category_spec_set_layout(spec, layout, unit));
        break;
    case SET_SINGLE_NODE:
        CHECK_OK(zooid_category_spec_set_single_node(spec));
        break;
    case SET_BLOCKS:
        CHECK_OK(zooid_category_spec_set_blocks(spec, unit));
        break;
    }
    CHECK_OK(zooid_service_create_category(service, category, spec));
    EXPECT_STATUS(ZOOID_STATUS_CATEGORY_EXISTS,
                  zooid_service_create_category(service, category, spec));
    zooid_category_spec_free(spec);

    zooid_id_set *set = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 10, &set));
    zooid_range got[4];
    size_t n = 0;
    CHECK_OK(zooid_id_set_ranges(set, got, 4, &n));
    CHECK_EQ(1, n);
    CHECK_EQ(1, got[0].start);
    CHECK_EQ(10, got[0].end);
    zooid_range used;
    CHECK_OK(zooid_id_set_take_range(set, 5, &used));
    CHECK_EQ(1, used.start);
    CHECK_EQ(5, used.end);
    CHECK_OK(zooid_service_push_ids(service, set));
    zooid_id_set_free(set);

    CHECK_OK(zooid_service_take_ids(service, category, 10, &set));
    CHECK_OK(zooid_id_set_ranges(set, got, 4, &n));
    int64_t want = 6, id = 0;
    while (zooid_id_set_take_id(set, &id) == ZOOID_STATUS_OK) {
        CHECK_EQ(want, id);
        want++;
    }
    CHECK_EQ(16, want);
    zooid_id_set_free(set);
    printf("%s: 1-10, pushed 6-10, then 6-15 in %zu range(s)\n", category, n);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CONNECT PREFIX\n", argv[0]);
        return 2;
    }
    const char *prefix = argv[2];
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], NULL, &service));
    char path[512];

    /* Refused, nothing created; a setter that fails leaves the spec as it was. */
    join_path(path, sizeof path, prefix, "/refused");
    zooid_category_spec *spec = NULL;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_new(10, 9, &spec));
    CHECK_LAST_ERROR_CONTAINS("category bounds 10..=9");
    CHECK(spec == NULL);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_new(1, 100, NULL));
    CHECK_OK(zooid_category_spec_new(1, 100, &spec));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_set_layout(spec, 4, 0));
    CHECK_LAST_ERROR_CONTAINS("layout 4");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_category_spec_set_layout(spec, 2, 100));
    CHECK_LAST_ERROR_CONTAINS("retired");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_category_spec_set_layout(spec, 0xFFFFFFFFu, 0));
    CHECK_LAST_ERROR_CONTAINS("layout 4294967295");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_category_spec_set_layout(spec, ZOOID_LAYOUT_HOLE_NODES, 1ull << 31));
    CHECK_LAST_ERROR_CONTAINS("block size 2147483648");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_set_blocks(spec, 0));
    CHECK_LAST_ERROR_CONTAINS("block size 0");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_set_ceiling(spec, 101));
    CHECK_LAST_ERROR_CONTAINS("ceiling 101");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_set_acl(spec, ""));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_set_acl(spec, NULL));
    CHECK_OK(zooid_category_spec_set_blocks(spec, 10));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_category_spec_set_acl(spec, "world:anyone:cdrwa"));
    CHECK_LAST_ERROR_CONTAINS("acl:");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_set_blocks(NULL, 10));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_create_category(NULL, path, spec));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_create_category(service, NULL, spec));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_create_category(service, path, NULL));
    CHECK_LAST_ERROR_CONTAINS("spec");
    zooid_category_spec_free(spec);
    zooid_category_spec_free(NULL);
    zooid_pool_info *info = NULL;
    EXPECT_STATUS(ZOOID_STATUS_NOT_FOUND, zooid_service_pool_info(service, path, &info));

    take_push_take(service, join_path(path, sizeof path, prefix, "/single"), SET_SINGLE_NODE, 0,
                   0);
    if (strncmp(argv[1], "mem:", 4) == 0) {
        join_path(path, sizeof path, prefix, "/holes");
        EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                      create_in(service, path, 1, 100, ZOOID_LAYOUT_HOLE_NODES, 0));
        EXPECT_STATUS(ZOOID_STATUS_NOT_FOUND, zooid_service_pool_info(service, path, &info));
        take_push_take(service, join_path(path, sizeof path, prefix, "/default-in"), SET_LAYOUT,
                       ZOOID_LAYOUT_DEFAULT, 0);
        take_push_take(service, join_path(path, sizeof path, prefix, "/default"), NO_LAYOUT, 0,
                       0);
        zooid_service_free(service);
        printf("layouts on mem: OK\n");
        return 0;
    }
    take_push_take(service, join_path(path, sizeof path, prefix, "/holes"), SET_BLOCKS, 0, 1000);
    take_push_take(service, join_path(path, sizeof path, prefix, "/holes-in"), SET_LAYOUT,
                   ZOOID_LAYOUT_HOLE_NODES, 0);
    take_push_take(service, join_path(path, sizeof path, prefix, "/default-in"), SET_LAYOUT,
                   ZOOID_LAYOUT_DEFAULT, 0);
    take_push_take(service, join_path(path, sizeof path, prefix, "/default"), NO_LAYOUT, 0, 0);

    /* A single node moved to hole nodes in place. */
    const char *moved = join_path(path, sizeof path, prefix, "/moved");
    CHECK_OK(create_in(service, moved, 1, 1000000, ZOOID_LAYOUT_SINGLE_NODE, 0));
    zooid_id_set *set = NULL;
    CHECK_OK(zooid_service_take_ids(service, moved, 10, &set));
    zooid_id_set_free(set);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_service_migrate_category(service, moved, ZOOID_LAYOUT_SINGLE_NODE, 0,
                                                 NULL));
    CHECK_LAST_ERROR_CONTAINS("not back to a single node");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_service_migrate_category(service, moved, 9, 0, NULL));
    CHECK_LAST_ERROR_CONTAINS("layout 9");
    /* ZOOID_LAYOUT_DEFAULT is hole nodes in blocks of `unit`: its unit is checked like theirs. */
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_service_migrate_category(service, moved, ZOOID_LAYOUT_DEFAULT,
                                                 (uint64_t)1 << 40, NULL));
    CHECK_LAST_ERROR_CONTAINS("2147483647");
    zooid_migrated migrated;
    memset(&migrated, 0xAB, sizeof migrated);
    CHECK_OK(zooid_service_migrate_category(service, moved, ZOOID_LAYOUT_HOLE_NODES, 0,
                                            &migrated));
    CHECK(migrated.moved);
    CHECK_EQ(1, migrated.from_format);
    CHECK_EQ(4, migrated.to_format);
    CHECK_EQ(11, migrated.base);
    memset(&migrated, 0xAB, sizeof migrated);
    CHECK_OK(zooid_service_migrate_category(service, moved, ZOOID_LAYOUT_DEFAULT, 0, &migrated));
    CHECK(!migrated.moved);
    CHECK_EQ(4, migrated.from_format);
    CHECK_EQ(4, migrated.to_format);
    CHECK_EQ(0, migrated.base);
    CHECK_OK(zooid_service_migrate_category(service, moved, ZOOID_LAYOUT_HOLE_NODES, 0, NULL));
    CHECK_OK(zooid_service_take_ids(service, moved, 10, &set));
    zooid_range got[2];
    size_t n = 0;
    CHECK_OK(zooid_id_set_ranges(set, got, 2, &n));
    CHECK_EQ(1, n);
    CHECK_EQ(11, got[0].start);
    CHECK_EQ(20, got[0].end);
    zooid_id_set_free(set);

    zooid_service_free(service);
    printf("layouts OK\n");
    return 0;
}
