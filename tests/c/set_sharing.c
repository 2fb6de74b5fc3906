/*
 * One ID set used by two threads at once must never hand an ID out twice:
 *
 * 1. A thread takes IDs from a set one by one while the main thread pushes the same set back:
 *    no ID the thread took may be free in the pool afterwards (the push and the takes are
 *    serialized on the set).
 * 2. A set that was pushed back is consumed: pushing it again fails with ZOOID_STATUS_CLOSED,
 *    naming the set, and taking from it finds it empty.
 * 3. Two threads push the same set at once: one push succeeds, the other fails with
 *    ZOOID_STATUS_CLOSED; the IDs are free once.
 *
 *   set_sharing CONNECT
 */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"

#define SET_SIZE 500000
/* Rounds in which the push found IDs left, wanted; a round in which the thread emptied the set
 * before the push began (a busy machine can deschedule the main thread that long) still checks
 * that no ID is handed out twice, but does not count. */
#define ROUNDS 10
#define MAX_ROUNDS 60

struct taker {
    zooid_id_set *set;
    atomic_int started;       /* set once the thread took its first ID */
    const atomic_int *pushed; /* set by the main thread once its push returned */
    int64_t *used;
    size_t used_len;
    zooid_status last;        /* the status that ended the loop */
    int ended_after_push;     /* whether the loop ended after the push had returned */
};

static void *take_until_empty(void *arg) {
    struct taker *t = arg;
    for (;;) {
        int64_t id = 0;
        zooid_status status = zooid_id_set_take_id(t->set, &id);
        if (status != ZOOID_STATUS_OK) {
            t->last = status;
            t->ended_after_push = atomic_load(t->pushed);
            return NULL;
        }
        CHECK(t->used_len < SET_SIZE);
        t->used[t->used_len++] = id;
        atomic_store(&t->started, 1);
    }
}

struct pusher {
    const zooid_service *service;
    zooid_id_set *set;
    atomic_int *gate;
    zooid_status status;
};

static void *push_at_gate(void *arg) {
    struct pusher *p = arg;
    atomic_fetch_add(p->gate, 1);
    while (atomic_load(p->gate) < 2) {
    }
    p->status = zooid_service_push_ids(p->service, p->set);
    return NULL;
}

/* How many of `ids` (any order) are free in the pool of `category`. */
static size_t free_in_pool(const zooid_service *service, const char *category, const int64_t *ids,
                           size_t n) {
    zooid_pool_info *info = NULL;
    CHECK_OK(zooid_service_pool_info(service, category, &info));
    const zooid_range *ranges = NULL;
    size_t count = 0;
    CHECK_OK(zooid_pool_info_free_ranges(info, &ranges, &count));
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        size_t lo = 0, hi = count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ranges[mid].end < ids[i]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (lo < count && ranges[lo].start <= ids[i]) {
            found++;
        }
    }
    zooid_pool_info_free(info);
    return found;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CONNECT\n", argv[0]);
        return 2;
    }
    const char *category = "/set-sharing/did";
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], NULL, &service));
    CHECK_OK(create_default(service, category, 1, 100000000));

    /* 1. Takes from a set while it is being pushed, until ROUNDS rounds overlapped (the thread
     *    may be descheduled during one push: over all rounds it takes IDs during many). */
    int64_t *used = malloc(SET_SIZE * sizeof *used);
    CHECK(used != NULL);
    size_t taken_total = 0, twice_total = 0;
    int64_t free_expected = 100000000;
    zooid_id_set *set = NULL;
    int rounds = 0, overlapped = 0;
    for (; overlapped < ROUNDS && rounds < MAX_ROUNDS; rounds++) {
        if (set != NULL) {
            zooid_id_set_free(set);
        }
        CHECK_OK(zooid_service_take_ids(service, category, SET_SIZE, &set));
        atomic_int pushed = 0;
        struct taker taker = {.set = set, .pushed = &pushed, .used = used};
        atomic_init(&taker.started, 0);
        pthread_t tid;
        CHECK(pthread_create(&tid, NULL, take_until_empty, &taker) == 0);
        while (!atomic_load(&taker.started)) {
        }
        CHECK_OK(zooid_service_push_ids(service, set));
        atomic_store(&pushed, 1);
        CHECK(pthread_join(tid, NULL) == 0);
        /* The thread was taking when the push began (it took one before); the round counts
         * when the push found IDs left. */
        CHECK(taker.used_len > 0 && taker.used_len <= SET_SIZE);
        overlapped += taker.used_len < SET_SIZE;
        CHECK_EQ(ZOOID_STATUS_EMPTY, taker.last);
        taken_total += taker.used_len;
        twice_total += free_in_pool(service, category, used, taker.used_len);
        free_expected -= (int64_t)taker.used_len;
    }
    uint64_t free_count = 0;
    zooid_pool_info *info = NULL;
    CHECK_OK(zooid_service_pool_info(service, category, &info));
    CHECK_OK(zooid_pool_info_free_count(info, &free_count));
    zooid_pool_info_free(info);
    printf("taken while pushing: %zu in %d rounds of %d (%d of them with IDs left for the "
           "push); of them free in the pool again: %zu; free: %llu (expected %lld)\n",
           taken_total, rounds, SET_SIZE, overlapped, twice_total,
           (unsigned long long)free_count, (long long)free_expected);
    /* Guard: the push and the takes overlapped in ROUNDS rounds. */
    CHECK_EQ(ROUNDS, overlapped);
    CHECK_EQ(0, twice_total);
    CHECK_EQ(free_expected, (int64_t)free_count);

    /* 2. A pushed set is consumed. */
    EXPECT_STATUS(ZOOID_STATUS_CLOSED, zooid_service_push_ids(service, set));
    CHECK_LAST_ERROR_CONTAINS("already pushed");
    CHECK_LAST_ERROR_CONTAINS(category);
    int64_t id = 0;
    EXPECT_STATUS(ZOOID_STATUS_EMPTY, zooid_id_set_take_id(set, &id));
    zooid_id_set_free(set);

    /* 3. Two threads push one set at once. */
    for (int round = 0; round < 20; round++) {
        zooid_id_set *shared = NULL;
        CHECK_OK(zooid_service_take_ids(service, category, 1000, &shared));
        atomic_int gate = 0;
        struct pusher a = {.service = service, .set = shared, .gate = &gate};
        struct pusher b = a;
        pthread_t ta, tb;
        CHECK(pthread_create(&ta, NULL, push_at_gate, &a) == 0);
        CHECK(pthread_create(&tb, NULL, push_at_gate, &b) == 0);
        CHECK(pthread_join(ta, NULL) == 0);
        CHECK(pthread_join(tb, NULL) == 0);
        int ok = (a.status == ZOOID_STATUS_OK) + (b.status == ZOOID_STATUS_OK);
        int closed = (a.status == ZOOID_STATUS_CLOSED) + (b.status == ZOOID_STATUS_CLOSED);
        if (ok != 1 || closed != 1) {
            fprintf(stderr, "round %d: the two pushes of one set returned %s and %s\n", round,
                    zooid_status_name(a.status), zooid_status_name(b.status));
            exit(1);
        }
        zooid_id_set_free(shared);
    }

    free(used);
    zooid_service_free(service);
    printf("set sharing OK\n");
    return 0;
}
