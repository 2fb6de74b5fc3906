/*
 * The seed's worked example through the C API.
 *
 *   worked_example CONNECT [PREFIX [LAYOUT]]
 *
 * Category /eventpublish/idgen/did (below PREFIX) with IDs 1..123456789, created in LAYOUT (a
 * zooid_layout number: 0, the store's default, unless given; 1 the single node; 3 hole nodes):
 * three takes of 10000; then 9000 IDs are used from each set and its last 1000 pushed back; a
 * take of 10000 yields exactly 9001-10000, 19001-20000, 29001-30000, 30001-37000, in that
 * order, and the free list is just 37001:123456789. The same IDs in every layout; what differs
 * is the pool node's version: a single node (the embedded stores' default) is written by every
 * take and push, a pool with hole nodes (ZooKeeper's default) by none of them.
 */
#include "check.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CONNECT [PREFIX [LAYOUT]]\n", argv[0]);
        return 2;
    }
    char path[512];
    const char *category = join_path(path, sizeof path, argc > 2 ? argv[2] : "",
                                     "/eventpublish/idgen/did");
    const char *connect = argv[1];
    uint32_t layout = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : ZOOID_LAYOUT_DEFAULT;
    bool embedded = strncmp(connect, "mem:", 4) == 0 || strncmp(connect, "file:", 5) == 0;
    bool single_node = layout == ZOOID_LAYOUT_SINGLE_NODE ||
                       (layout == ZOOID_LAYOUT_DEFAULT && embedded);
    CHECK(single_node || layout == ZOOID_LAYOUT_DEFAULT || layout == ZOOID_LAYOUT_HOLE_NODES);

    zooid_options *options = NULL;
    CHECK_OK(zooid_options_new(&options));
    CHECK_OK(zooid_options_set_session_timeout_ms(options, 5000));
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(connect, options, &service));
    zooid_options_free(options);

    zooid_category_spec *spec = NULL;
    CHECK_OK(zooid_category_spec_new(1, 123456789, &spec));
    if (argc > 3) {
        CHECK_OK(zooid_category_spec_set_layout(spec, layout, 0));
    }
    CHECK_OK(zooid_service_create_category(service, category, spec));
    zooid_category_spec_free(spec);

    /* Three workers take 10000 IDs each: 1-10000, 10001-20000, 20001-30000. */
    zooid_id_set *sets[3];
    for (int64_t w = 0; w < 3; w++) {
        CHECK_OK(zooid_service_take_ids(service, category, 10000, &sets[w]));
        uint64_t count = 0;
        CHECK_OK(zooid_id_set_count(sets[w], &count));
        CHECK_EQ(10000, count);
    }
    /* Each uses 9000 of them and pushes back its last 1000. */
    for (int64_t w = 0; w < 3; w++) {
        zooid_id_set *set = sets[w];
        if (w < 2) {
            for (int64_t i = 1; i <= 9000; i++) {
                int64_t id = 0;
                CHECK_OK(zooid_id_set_take_id(set, &id));
                CHECK_EQ(w * 10000 + i, id);
            }
        } else {
            /* The third worker takes its 9000 in bulk: 5000, then 4000. */
            zooid_range run;
            CHECK_OK(zooid_id_set_take_range(set, 5000, &run));
            CHECK_EQ(20001, run.start);
            CHECK_EQ(25000, run.end);
            CHECK_OK(zooid_id_set_take_range(set, 4000, &run));
            CHECK_EQ(25001, run.start);
            CHECK_EQ(29000, run.end);
        }
        bool more = false;
        CHECK_OK(zooid_id_set_has_more(set, &more));
        CHECK(more);
        uint64_t count = 0;
        CHECK_OK(zooid_id_set_count(set, &count));
        CHECK_EQ(1000, count);
        zooid_range left[2];
        size_t n = 0;
        CHECK_OK(zooid_id_set_ranges(set, left, 2, &n));
        CHECK_EQ(1, n);
        CHECK_EQ(w * 10000 + 9001, left[0].start);
        CHECK_EQ(w * 10000 + 10000, left[0].end);

        CHECK_OK(zooid_service_push_ids(service, set));
        CHECK_OK(zooid_id_set_has_more(set, &more));
        CHECK(!more);
        zooid_id_set_free(set);
    }

    /* The pushed-back IDs are free again; 29001-30000 merged with the untouched rest. */
    zooid_pool_info *info = NULL;
    CHECK_OK(zooid_service_pool_info(service, category, &info));
    const zooid_range *free_ranges = NULL;
    size_t free_n = 0;
    CHECK_OK(zooid_pool_info_free_ranges(info, &free_ranges, &free_n));
    CHECK_EQ(3, free_n);
    CHECK_EQ(9001, free_ranges[0].start);
    CHECK_EQ(10000, free_ranges[0].end);
    CHECK_EQ(19001, free_ranges[1].start);
    CHECK_EQ(20000, free_ranges[1].end);
    CHECK_EQ(29001, free_ranges[2].start);
    CHECK_EQ(123456789, free_ranges[2].end);
    zooid_pool_info_free(info);

    /* The next take of 10000 gets the pushed-back IDs first, lowest first. */
    zooid_id_set *set = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 10000, &set));
    size_t n = 0;
    CHECK_OK(zooid_id_set_ranges(set, NULL, 0, &n));
    CHECK_EQ(3, n);
    zooid_range got[3];
    CHECK_OK(zooid_id_set_ranges(set, got, 3, &n));
    CHECK_EQ(9001, got[0].start);
    CHECK_EQ(10000, got[0].end);
    CHECK_EQ(19001, got[1].start);
    CHECK_EQ(20000, got[1].end);
    CHECK_EQ(29001, got[2].start); /* 29001-30000 and 30001-37000, adjacent */
    CHECK_EQ(37000, got[2].end);
    const zooid_range expected[4] = {
        {9001, 10000}, {19001, 20000}, {29001, 30000}, {30001, 37000}};
    /* The IDs come out one by one in exactly that order. */
    size_t r = 0;
    int64_t want = expected[0].start, id = 0;
    uint64_t taken = 0;
    while (zooid_id_set_take_id(set, &id) == ZOOID_STATUS_OK) {
        CHECK(r < 4);
        CHECK_EQ(want, id);
        taken++;
        if (want == expected[r].end) {
            r++;
            want = r < 4 ? expected[r].start : 0;
        } else {
            want++;
        }
    }
    CHECK_EQ(10000, taken);
    CHECK_EQ(4, r);
    char category_back[512];
    size_t category_len = 0;
    CHECK_OK(zooid_id_set_category(set, category_back, sizeof category_back, &category_len));
    CHECK(strcmp(category_back, category) == 0);
    CHECK_EQ(strlen(category), category_len);
    zooid_id_set_free(set);

    CHECK_OK(zooid_service_pool_info(service, category, &info));
    CHECK_OK(zooid_pool_info_free_ranges(info, &free_ranges, &free_n));
    CHECK_EQ(1, free_n);
    CHECK_EQ(37001, free_ranges[0].start);
    CHECK_EQ(123456789, free_ranges[0].end);
    uint64_t free_count = 0;
    CHECK_OK(zooid_pool_info_free_count(info, &free_count));
    CHECK_EQ(123456789 - 37000, free_count);
    zooid_range bounds;
    CHECK_OK(zooid_pool_info_bounds(info, &bounds));
    CHECK_EQ(1, bounds.start);
    CHECK_EQ(123456789, bounds.end);
    int32_t version = -1;
    size_t bytes = 0;
    CHECK_OK(zooid_pool_info_node(info, &version, &bytes));
    /* A single node: create, then 3 x (take, push), then a take. Hole nodes: the takes claim
     * blocks and holes, the pushes create holes; the pool node keeps its created version. */
    CHECK_EQ(single_node ? 7 : 0, version);
    CHECK(bytes > 0);
    zooid_pool_info_free(info);

    zooid_service_free(service);
    printf("worked example OK: 9001-10000 19001-20000 29001-30000 30001-37000; free 37001:123456789\n");
    return 0;
}
