/*
 * Many threads share one service and take, use and push back IDs concurrently; every ID used
 * must be unique, and the pool must account for exactly the IDs not used.
 *
 *   threads CONNECT [PREFIX] [THREADS] [ROUNDS] [BLOCK_SIZE]
 *
 * With BLOCK_SIZE, the category is created in block allocation (ZooKeeper only).
 *
 * Half the threads use the shared reference, the other half their own reference from
 * zooid_service_clone, released by the thread itself.
 */
#include <pthread.h>

#include "check.h"

#define MAX_TAKE 300

struct worker {
    const zooid_service *service;
    int own_reference;
    const char *category;
    int rounds;
    uint64_t seed;
    int64_t *used; /* IDs this thread used */
    size_t used_len;
    size_t used_cap;
};

static uint64_t next_random(uint64_t *state) {
    /* xorshift64 */
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

static void *work(void *arg) {
    struct worker *w = arg;
    for (int round = 0; round < w->rounds; round++) {
        uint64_t n = 1 + next_random(&w->seed) % MAX_TAKE;
        zooid_id_set *set = NULL;
        CHECK_OK(zooid_service_take_ids(w->service, w->category, n, &set));
        uint64_t count = 0;
        CHECK_OK(zooid_id_set_count(set, &count));
        CHECK_EQ(n, count);
        /* Use all of them, or only some and push the rest back. */
        uint64_t use = next_random(&w->seed) % 2 ? n : next_random(&w->seed) % (n + 1);
        if (round % 2) {
            for (uint64_t i = 0; i < use; i++) {
                int64_t id = 0;
                CHECK_OK(zooid_id_set_take_id(set, &id));
                CHECK(w->used_len < w->used_cap);
                w->used[w->used_len++] = id;
            }
        } else {
            /* In bulk: runs of at most 64 IDs. */
            for (uint64_t left = use; left > 0;) {
                zooid_range run;
                CHECK_OK(zooid_id_set_take_range(set, left < 64 ? left : 64, &run));
                for (int64_t id = run.start; id <= run.end; id++) {
                    CHECK(w->used_len < w->used_cap);
                    w->used[w->used_len++] = id;
                }
                left -= (uint64_t)(run.end - run.start + 1);
            }
        }
        if (use < n) {
            CHECK_OK(zooid_service_push_ids(w->service, set));
        } else {
            int64_t id = 0;
            EXPECT_STATUS(ZOOID_STATUS_EMPTY, zooid_id_set_take_id(set, &id));
        }
        zooid_id_set_free(set);
    }
    if (w->own_reference) {
        zooid_service_free(w->service);
    }
    return NULL;
}

static int compare_ids(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CONNECT [PREFIX] [THREADS] [ROUNDS] [BLOCK_SIZE]\n", argv[0]);
        return 2;
    }
    char path[512];
    const char *category = join_path(path, sizeof path, argc > 2 ? argv[2] : "", "/threads/did");
    int threads = argc > 3 ? atoi(argv[3]) : 8;
    int rounds = argc > 4 ? atoi(argv[4]) : 40;
    CHECK(threads > 0 && threads <= 64 && rounds > 0);
    const int64_t last = 100000000;

    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], NULL, &service));
    long long block_size = argc > 5 ? atoll(argv[5]) : 0;
    if (block_size > 0) {
        CHECK_OK(create_in(service, category, 1, last, ZOOID_LAYOUT_HOLE_NODES, (uint64_t)block_size));
    } else {
        CHECK_OK(create_default(service, category, 1, last));
    }

    pthread_t tids[64];
    struct worker workers[64];
    for (int t = 0; t < threads; t++) {
        struct worker *w = &workers[t];
        memset(w, 0, sizeof *w);
        w->category = category;
        w->rounds = rounds;
        w->seed = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
        w->used_cap = (size_t)rounds * MAX_TAKE;
        w->used = malloc(w->used_cap * sizeof *w->used);
        CHECK(w->used != NULL);
        w->own_reference = t % 2;
        if (w->own_reference) {
            CHECK_OK(zooid_service_clone(service, &w->service));
            CHECK(w->service == service);
        } else {
            w->service = service;
        }
        CHECK(pthread_create(&tids[t], NULL, work, w) == 0);
    }
    size_t total = 0;
    for (int t = 0; t < threads; t++) {
        CHECK(pthread_join(tids[t], NULL) == 0);
        total += workers[t].used_len;
    }

    int64_t *all = malloc((total ? total : 1) * sizeof *all);
    CHECK(all != NULL);
    size_t at = 0;
    for (int t = 0; t < threads; t++) {
        memcpy(all + at, workers[t].used, workers[t].used_len * sizeof *all);
        at += workers[t].used_len;
        free(workers[t].used);
    }
    qsort(all, total, sizeof *all, compare_ids);
    for (size_t i = 0; i < total; i++) {
        CHECK(all[i] >= 1 && all[i] <= last);
        if (i > 0 && all[i] == all[i - 1]) {
            fprintf(stderr, "ID %lld was handed out twice\n", (long long)all[i]);
            return 1;
        }
    }

    /* Every ID is either used (once) or free in the pool. */
    zooid_pool_info *info = NULL;
    CHECK_OK(zooid_service_pool_info(service, category, &info));
    uint64_t free_count = 0;
    CHECK_OK(zooid_pool_info_free_count(info, &free_count));
    CHECK_EQ((uint64_t)last - total, free_count);
    const zooid_range *free_ranges = NULL;
    size_t free_n = 0;
    CHECK_OK(zooid_pool_info_free_ranges(info, &free_ranges, &free_n));
    size_t u = 0;
    for (size_t r = 0; r < free_n; r++) {
        while (u < total && all[u] < free_ranges[r].start) {
            u++;
        }
        CHECK(u == total || all[u] > free_ranges[r].end); /* no used ID is free */
    }
    zooid_pool_info_free(info);
    free(all);
    zooid_service_free(service);
    printf("threads OK: %d threads x %d rounds, %zu unique IDs used\n", threads, rounds, total);
    return 0;
}
