/*
 * zooid_service_stats from C.
 *
 *   stats CONNECT CATEGORY OTHER_CONNECT
 *       CONNECT goes through the test's proxy, armed to swallow the reply to the first write of
 *       CATEGORY after its creation; OTHER_CONNECT reaches the server directly. Takes 10 (its
 *       reply lost: resolved as applied), lets a second service take 5 (a version conflict for
 *       the first), takes 20, pushes them back, and checks every figure; then the ABI-growth
 *       rules: an older, shorter struct is filled only up to its struct_size, a struct_size
 *       below the header and NULL arguments are refused without a write.
 */
#include <stddef.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: stats CONNECT CATEGORY OTHER_CONNECT\n");
        return 2;
    }
    const char *category = argv[2];
    const zooid_service *service = NULL, *other = NULL;
    CHECK_OK(zooid_service_open(argv[1], NULL, &service));
    CHECK_OK(zooid_service_open(argv[3], NULL, &other));
    /* The single-node layout: every take and push is a setData of the pool node, the write
     * whose reply the proxy swallows and on which the second service's take conflicts. */
    CHECK_OK(create_in(service, category, 1, 1000000,
                                              ZOOID_LAYOUT_SINGLE_NODE, 0));

    zooid_id_set *ids = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 10, &ids)); /* reply lost */
    zooid_id_set_free(ids);
    /* After the reconnection the pool is read again; remembered from here on. */
    CHECK_OK(zooid_service_take_ids(service, category, 5, &ids));
    zooid_id_set_free(ids);
    CHECK_OK(zooid_service_take_ids(other, category, 5, &ids));
    zooid_id_set_free(ids);
    CHECK_OK(zooid_service_take_ids(service, category, 15, &ids)); /* conflicts once */
    CHECK_OK(zooid_service_push_ids(service, ids));
    zooid_id_set_free(ids);

    zooid_stats stats;
    memset(&stats, 0xAB, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_OK(zooid_service_stats(service, &stats));
    CHECK_EQ(sizeof stats, stats.struct_size);
    CHECK_EQ(ZOOID_STATS_VERSION, stats.version);
    CHECK_EQ(3, stats.takes);
    CHECK_EQ(30, stats.ids_taken);
    CHECK_EQ(1, stats.pushes);
    CHECK_EQ(15, stats.ids_pushed);
    CHECK_EQ(0, stats.failed_ops);
    CHECK_EQ(1, stats.version_conflicts);
    CHECK(stats.retries >= 1);
    CHECK_EQ(1, stats.lost_replies);
    CHECK_EQ(1, stats.lost_applied);
    CHECK_EQ(0, stats.lost_not_applied);
    CHECK_EQ(0, stats.lost_unknown);
    CHECK_EQ(0, stats.ids_leaked);
    CHECK_EQ(0, stats.session_losses);
    CHECK_EQ(1, stats.session_generation);
    CHECK_EQ(4, stats.latency_count);
    uint64_t bucketed = 0;
    for (int i = 0; i < ZOOID_STATS_LATENCY_BUCKETS; i++) bucketed += stats.latency_buckets[i];
    CHECK_EQ(4, bucketed);
    CHECK(stats.latency_max_us > 0 && stats.latency_sum_us >= stats.latency_max_us);
    printf("takes=%llu conflicts=%llu lost=%llu applied=%llu latency_max_us=%llu\n",
           (unsigned long long)stats.takes, (unsigned long long)stats.version_conflicts,
           (unsigned long long)stats.lost_replies, (unsigned long long)stats.lost_applied,
           (unsigned long long)stats.latency_max_us);

    /* A program built against an older, shorter layout: only its bytes are written. */
    zooid_stats older;
    memset(&older, 0xAB, sizeof older);
    older.struct_size = (uint32_t)offsetof(zooid_stats, ids_taken);
    CHECK_OK(zooid_service_stats(service, &older));
    CHECK_EQ(offsetof(zooid_stats, ids_taken), older.struct_size);
    CHECK_EQ(3, older.takes);
    CHECK_EQ(1, older.pushes);
    CHECK_EQ(0xABABABABABABABABull, older.ids_taken);

    /* Refused, nothing written. */
    zooid_stats tiny;
    memset(&tiny, 0xAB, sizeof tiny);
    tiny.struct_size = 4;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_stats(service, &tiny));
    CHECK_LAST_ERROR_CONTAINS("sizeof(zooid_stats)");
    CHECK_EQ(0xABABABABu, tiny.version);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_stats(service, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_stats(NULL, &stats));

    zooid_service_free(service);
    zooid_service_free(other);
    puts("OK");
    return 0;
}
