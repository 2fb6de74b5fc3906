/*
 * The prefetching ID source from C: threads share one source; every ID is unique; close pushes
 * back everything not handed out (the prefetched batch included); the error paths give their
 * statuses.
 *
 *   prefetch CONNECT [PREFIX] [THREADS] [IDS_PER_THREAD]
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "check.h"

struct worker {
    const zooid_id_source *source;
    int n;
    int64_t *ids;
};

static void *work(void *arg) {
    struct worker *w = arg;
    for (int i = 0; i < w->n; i++) {
        CHECK_OK(zooid_id_source_next(w->source, &w->ids[i]));
    }
    return NULL;
}

static int compare_ids(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t free_count(const zooid_service *service, const char *category) {
    zooid_pool_info *info = NULL;
    CHECK_OK(zooid_service_pool_info(service, category, &info));
    uint64_t count = 0;
    CHECK_OK(zooid_pool_info_free_count(info, &count));
    zooid_pool_info_free(info);
    return count;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: prefetch CONNECT [PREFIX] [THREADS] [IDS_PER_THREAD]\n");
        return 2;
    }
    const char *prefix = argc > 2 ? argv[2] : "";
    int threads = argc > 3 ? atoi(argv[3]) : 4;
    int per_thread = argc > 4 ? atoi(argv[4]) : 5000;
    CHECK(threads >= 1 && threads <= 64 && per_thread >= 1);
    char category[512], missing[512];
    join_path(category, sizeof category, prefix, "/prefetch/did");
    join_path(missing, sizeof missing, prefix, "/prefetch/missing");

    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], NULL, &service));
    const int64_t last = 100000000;
    CHECK_OK(create_default(service, category, 1, last));
    uint64_t before = free_count(service, category);

    zooid_source_options *options = NULL;
    CHECK_OK(zooid_source_options_new(&options));
    CHECK_OK(zooid_source_options_set_batch(options, 100, 50, 1600));
    CHECK_OK(zooid_source_options_set_refill_when_used_percent(options, 10));
    CHECK_OK(zooid_source_options_set_target_batch_ms(options, 1000));

    /* Error paths. */
    zooid_id_source *source = NULL;
    EXPECT_STATUS(ZOOID_STATUS_NOT_FOUND, zooid_id_source_open(service, missing, options, &source));
    CHECK(source == NULL);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_source_open(NULL, category, options, &source));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_source_open(service, category, options, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_source_options_set_refill_when_used_percent(options, 0));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_source_options_set_target_batch_ms(options, 0));
    zooid_source_options *bad = NULL;
    CHECK_OK(zooid_source_options_new(&bad));
    CHECK_OK(zooid_source_options_set_batch(bad, 10, 0, 100));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_source_open(service, category, bad, &source));
    CHECK_LAST_ERROR_CONTAINS("min_batch");
    zooid_source_options_free(bad);
    int64_t id = 0;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_source_next(NULL, &id));

    CHECK_OK(zooid_id_source_open(service, category, options, &source));
    zooid_source_options_free(options);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_source_next(source, NULL));
    CHECK_OK(zooid_id_source_try_next(source, &id));
    CHECK_EQ(1, id);

    pthread_t tids[64];
    struct worker workers[64];
    for (int t = 0; t < threads; t++) {
        workers[t].source = source;
        workers[t].n = per_thread;
        workers[t].ids = malloc((size_t)per_thread * sizeof(int64_t));
        CHECK(workers[t].ids != NULL);
        CHECK(pthread_create(&tids[t], NULL, work, &workers[t]) == 0);
    }
    size_t total = 1 + (size_t)threads * (size_t)per_thread;
    int64_t *all = malloc(total * sizeof *all);
    CHECK(all != NULL);
    all[0] = id;
    size_t at = 1;
    for (int t = 0; t < threads; t++) {
        CHECK(pthread_join(tids[t], NULL) == 0);
        memcpy(all + at, workers[t].ids, (size_t)per_thread * sizeof *all);
        at += (size_t)per_thread;
        free(workers[t].ids);
    }
    qsort(all, total, sizeof *all, compare_ids);
    for (size_t i = 1; i < total; i++) {
        if (all[i] == all[i - 1]) {
            fprintf(stderr, "ID %lld was handed out twice\n", (long long)all[i]);
            return 1;
        }
    }
    free(all);

    zooid_source_stats stats;
    memset(&stats, 0, sizeof stats);
    CHECK_OK(zooid_id_source_stats(source, &stats));
    CHECK_EQ(total, stats.handed_out);
    CHECK(stats.refills > 1);
    CHECK(stats.last_batch >= 50 && stats.last_batch <= 1600);
    printf("stats: %llu IDs, %llu batches (last %llu), %llu waits, %llu held\n",
           (unsigned long long)stats.handed_out, (unsigned long long)stats.refills,
           (unsigned long long)stats.last_batch, (unsigned long long)stats.waits,
           (unsigned long long)stats.local);

    /* The service reference may go first: the source keeps the session. */
    const zooid_service *second = NULL;
    CHECK_OK(zooid_service_clone(service, &second));
    zooid_service_free(service);
    CHECK_OK(zooid_id_source_close(source));
    CHECK_EQ(before - total, free_count(second, category));
    EXPECT_STATUS(ZOOID_STATUS_CLOSED, zooid_id_source_next(source, &id));
    EXPECT_STATUS(ZOOID_STATUS_CLOSED, zooid_id_source_try_next(source, &id));
    CHECK_OK(zooid_id_source_close(source)); /* nothing left to push */
    CHECK_OK(zooid_id_source_stats(source, &stats));
    CHECK_EQ(0, stats.local);
    zooid_id_source_free(source);
    zooid_id_source_free(NULL);
    zooid_source_options_free(NULL);

    /* Freed without close: pushed back in the background. */
    CHECK_OK(zooid_id_source_open(second, category, NULL, &source));
    CHECK_OK(zooid_id_source_next(source, &id));
    zooid_id_source_free(source);
    int pushed = 0;
    for (int i = 0; i < 200 && !pushed; i++) {
        pushed = free_count(second, category) == before - total - 1;
        if (!pushed) {
            struct timespec ms = {0, 10 * 1000 * 1000};
            nanosleep(&ms, NULL);
        }
    }
    CHECK(pushed);
    zooid_service_free(second);
    printf("prefetch OK: %d threads x %d IDs, %zu unique IDs\n", threads, per_thread, total);
    return 0;
}
