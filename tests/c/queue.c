/*
 * The work queue from C, against a real ZooKeeper: items come out in put order, release gives an
 * item back, complete removes it for good, a freed claim that was neither is released, a claim
 * waits for a put, a consumer started before its queue's first put gets that item, and every
 * error a caller can provoke: an oversize item, a full queue, a claim that times out, a finished claim used again, bad arguments, a queue
 * on a store without a ZooKeeper session; and threads sharing one queue complete every item once. Out-parameters must stay untouched on failure.
 *
 *   queue CONNECT PREFIX
 */
#include <pthread.h>
#include <time.h>

#include "check.h"

/* A value no call may write on failure. */
#define SENTINEL ((void *)0x5a5a)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int put_text(const zooid_queue *queue, const char *text, char *name, size_t name_len) {
    size_t full = 0;
    zooid_status status =
        zooid_queue_put(queue, (const uint8_t *)text, strlen(text), name, name_len, &full);
    if (status == ZOOID_STATUS_OK && name != NULL) {
        CHECK(full < name_len);
        CHECK_EQ(full, strlen(name));
    }
    return status;
}

/* A consumer started before the first put of its queue. */
struct early_consumer {
    const zooid_queue *queue;
    int status;
    zooid_claim *claim;
};

static void *claim_early(void *arg) {
    struct early_consumer *early = arg;
    early->status = zooid_queue_claim(early->queue, 20000, &early->claim);
    return NULL;
}

/* Claims (waiting up to 10 s) and checks the item's data and name. */
static zooid_claim *claim_expect(const zooid_queue *queue, const char *text, const char *name) {
    zooid_claim *claim = NULL;
    CHECK_OK(zooid_queue_claim(queue, 10000, &claim));
    const uint8_t *data = NULL;
    size_t len = 0;
    CHECK_OK(zooid_claim_data(claim, &data, &len));
    CHECK_EQ(strlen(text), len);
    CHECK(memcmp(data, text, len) == 0);
    char item[ZOOID_QUEUE_ITEM_NAME_MAX];
    size_t full = 0;
    CHECK_OK(zooid_claim_item(claim, item, sizeof item, &full));
    CHECK_EQ(strlen(item), full);
    if (name != NULL && strcmp(item, name) != 0) {
        fprintf(stderr, "claimed %s, expected %s (\"%s\")\n", item, name, text);
        exit(1);
    }
    return claim;
}

struct waiter {
    const zooid_queue *queue;
    zooid_status status;
    zooid_claim *claim;
};

#define SHARED_ITEMS 60
#define CONSUMERS 4

struct consumers {
    const zooid_queue *queue;
    pthread_mutex_t lock;
    int completed[SHARED_ITEMS]; /* how often each item was completed */
};

/* Every item completed (at least once) so far. */
static int all_completed(struct consumers *c) {
    pthread_mutex_lock(&c->lock);
    int all = 1;
    for (int i = 0; i < SHARED_ITEMS; i++) {
        all = all && c->completed[i] > 0;
    }
    pthread_mutex_unlock(&c->lock);
    return all;
}

/* Claims and completes until every item was completed and no item comes for a second (a slow,
 * loaded machine under valgrind may take longer than that for one claim: up to a minute of
 * empty seconds is waited for); each item's data is its index. */
static void *consume(void *arg) {
    struct consumers *c = arg;
    int empty = 0;
    for (;;) {
        zooid_claim *claim = NULL;
        zooid_status status = zooid_queue_claim(c->queue, 1000, &claim);
        if (status == ZOOID_STATUS_TIMEOUT) {
            if (all_completed(c) || ++empty >= 60) {
                return NULL;
            }
            continue;
        }
        CHECK_OK(status);
        const uint8_t *data = NULL;
        size_t len = 0;
        CHECK_OK(zooid_claim_data(claim, &data, &len));
        CHECK(len == sizeof(int));
        int index;
        memcpy(&index, data, sizeof index);
        CHECK(index >= 0 && index < SHARED_ITEMS);
        CHECK_OK(zooid_claim_complete(claim));
        zooid_claim_free(claim);
        pthread_mutex_lock(&c->lock);
        c->completed[index]++;
        pthread_mutex_unlock(&c->lock);
    }
}

static void *wait_for_item(void *arg) {
    struct waiter *w = arg;
    w->status = zooid_queue_claim(w->queue, 20000, &w->claim);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CONNECT PREFIX\n", argv[0]);
        return 2;
    }
    char p1[512], p2[512];
    const char *path = join_path(p1, sizeof p1, argv[2], "/queue/jobs");
    const char *missing = join_path(p2, sizeof p2, argv[2], "/queue/missing");
    const char bad_utf8[] = {'/', 'a', (char)0xff, (char)0xfe, 0};

    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], NULL, &service));

    /* Options. */
    zooid_queue_options *options = SENTINEL;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_options_new(NULL));
    CHECK_OK(zooid_queue_options_new(&options));
    CHECK(options != SENTINEL);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_options_set_max_items(NULL, 3));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_options_set_op_timeout_ms(options, 0));
    CHECK_LAST_ERROR_CONTAINS("at least 1 ms");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_options_set_identity(options, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_queue_options_set_identity(options, bad_utf8));

    /* Opening: bad paths and options are refused before anything is sent. */
    zooid_queue *queue = SENTINEL;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_open(NULL, path, NULL, &queue));
    CHECK_LAST_ERROR_CONTAINS("service is NULL");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_open(service, NULL, NULL, &queue));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_open(service, path, NULL, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_queue_open(service, "relative", NULL, &queue));
    CHECK_LAST_ERROR_CONTAINS("absolute");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_open(service, "/a//b", NULL, &queue));
    CHECK_OK(zooid_queue_options_set_max_items(options, 0));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_open(service, path, options, &queue));
    CHECK_LAST_ERROR_CONTAINS("max_items");
    CHECK_OK(zooid_queue_options_set_max_items(options, 25001));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_open(service, path, options, &queue));
    CHECK_OK(zooid_queue_options_set_max_item_bytes(options, 1000001));
    CHECK_OK(zooid_queue_options_set_max_items(options, 3));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_open(service, path, options, &queue));
    CHECK_LAST_ERROR_CONTAINS("max_item_bytes");
    CHECK(queue == SENTINEL);
    /* The embedded stores have no ZooKeeper session. */
    const zooid_service *mem = NULL;
    CHECK_OK(zooid_service_open("mem:", NULL, &mem));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_open(mem, path, NULL, &queue));
    CHECK_LAST_ERROR_CONTAINS("ZooKeeper");
    zooid_service_free(mem);

    /* A queue of at most 3 items of at most 16 bytes. */
    CHECK_OK(zooid_queue_options_set_max_item_bytes(options, 16));
    CHECK_OK(zooid_queue_options_set_op_timeout_ms(options, 20000));
    CHECK_OK(zooid_queue_options_set_identity(options, "c-test"));
    CHECK_OK(zooid_queue_open(service, path, options, &queue));
    zooid_queue_options_free(options);
    zooid_queue_options_free(NULL);

    /* Workers start before producers: a claim on a queue never put to finds nothing (it does
     * not fail), and a consumer waiting on it gets the first item put. */
    zooid_queue *nowhere = NULL;
    CHECK_OK(zooid_queue_open(service, missing, NULL, &nowhere));
    zooid_claim *claim = SENTINEL;
    EXPECT_STATUS(ZOOID_STATUS_TIMEOUT, zooid_queue_claim(nowhere, 0, &claim));
    CHECK(claim == SENTINEL);
    {
        struct early_consumer early = {.queue = nowhere, .status = -1, .claim = NULL};
        pthread_t consumer;
        CHECK(pthread_create(&consumer, NULL, claim_early, &early) == 0);
        struct timespec pause = {.tv_sec = 1, .tv_nsec = 0};
        nanosleep(&pause, NULL);
        zooid_queue *producer = NULL;
        CHECK_OK(zooid_queue_open(service, missing, NULL, &producer));
        CHECK_OK(put_text(producer, "early", NULL, 0));
        CHECK(pthread_join(consumer, NULL) == 0);
        CHECK_OK(early.status);
        const uint8_t *data = NULL;
        size_t len = 0;
        CHECK_OK(zooid_claim_data(early.claim, &data, &len));
        CHECK(len == 5 && memcmp(data, "early", 5) == 0);
        CHECK_OK(zooid_claim_complete(early.claim));
        zooid_claim_free(early.claim);
        zooid_queue_free(producer);
    }
    zooid_queue_free(nowhere);

    /* Puts: names, the size limit, the item limit. */
    char a[ZOOID_QUEUE_ITEM_NAME_MAX], b[ZOOID_QUEUE_ITEM_NAME_MAX], c[ZOOID_QUEUE_ITEM_NAME_MAX];
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_put(NULL, (const uint8_t *)"x", 1,
                                                                 NULL, 0, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_put(queue, NULL, 1, NULL, 0, NULL));
    CHECK_LAST_ERROR_CONTAINS("data is NULL");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_put(queue, (const uint8_t *)"x", 1,
                                                                 NULL, 8, NULL));
    EXPECT_STATUS(ZOOID_STATUS_TOO_LARGE, put_text(queue, "seventeen bytes!!", a, sizeof a));
    CHECK_LAST_ERROR_CONTAINS("over its limit of 16");
    /* A length past the buffer (here SIZE_MAX) is refused before a byte is read. */
    EXPECT_STATUS(ZOOID_STATUS_TOO_LARGE,
                  zooid_queue_put(queue, (const uint8_t *)"x", SIZE_MAX, NULL, 0, NULL));
    CHECK_LAST_ERROR_CONTAINS("queue item (data)");
    CHECK_OK(put_text(queue, "alpha", a, sizeof a));
    CHECK_OK(put_text(queue, "sixteen bytes!!!", b, sizeof b));
    /* The name cut short like snprintf; the put itself happened. */
    char cut[8];
    size_t full = 0;
    CHECK_OK(zooid_queue_put(queue, (const uint8_t *)"gamma", 5, cut, sizeof cut, &full));
    CHECK_EQ(7, strlen(cut));
    CHECK(full >= sizeof cut);
    EXPECT_STATUS(ZOOID_STATUS_QUEUE_FULL, put_text(queue, "delta", NULL, 0));
    CHECK_LAST_ERROR_CONTAINS("is full");
    printf("put %s, %s, %.7s...\n", a, b, cut);

    /* In put order; a released item comes back first. */
    claim = claim_expect(queue, "alpha", a);
    uint64_t seq_a = 0, seq_b = 0;
    CHECK_OK(zooid_claim_sequence(claim, &seq_a));
    bool lost = true;
    CHECK_OK(zooid_claim_is_lost(claim, &lost));
    CHECK(!lost);
    CHECK_OK(zooid_claim_release(claim));
    CHECK_OK(zooid_claim_is_lost(claim, &lost));
    CHECK(lost);
    EXPECT_STATUS(ZOOID_STATUS_CLOSED, zooid_claim_release(claim));
    EXPECT_STATUS(ZOOID_STATUS_CLOSED, zooid_claim_complete(claim));
    CHECK_LAST_ERROR_CONTAINS("already completed or released");
    zooid_claim_free(claim);
    claim = claim_expect(queue, "alpha", a);
    CHECK_OK(zooid_claim_complete(claim));
    /* The data and name stay readable until the claim is freed. */
    const uint8_t *data = NULL;
    size_t len = 0;
    CHECK_OK(zooid_claim_data(claim, &data, &len));
    CHECK(len == 5 && memcmp(data, "alpha", 5) == 0);
    EXPECT_STATUS(ZOOID_STATUS_CLOSED, zooid_claim_complete(claim));
    zooid_claim_free(claim);

    /* Completing made room for one more. */
    CHECK_OK(put_text(queue, "delta", c, sizeof c));
    zooid_claim *second = claim_expect(queue, "sixteen bytes!!!", b);
    CHECK_OK(zooid_claim_sequence(second, &seq_b));
    CHECK(seq_b > seq_a);
    zooid_claim *third = claim_expect(queue, "gamma", NULL);
    zooid_claim *fourth = NULL;
    CHECK_OK(zooid_queue_claim(queue, 0, &fourth));
    zooid_claim_free(fourth); /* released: "delta" is handed out again */
    fourth = claim_expect(queue, "delta", c);

    /* Everything is claimed: a claim times out, and says so. */
    zooid_claim *none = SENTINEL;
    EXPECT_STATUS(ZOOID_STATUS_TIMEOUT, zooid_queue_claim(queue, 0, &none));
    double started = now_ms();
    EXPECT_STATUS(ZOOID_STATUS_TIMEOUT, zooid_queue_claim(queue, 300, &none));
    double waited = now_ms() - started;
    CHECK_LAST_ERROR_CONTAINS("timed out");
    CHECK(none == SENTINEL);
    CHECK(waited >= 290 && waited < 5000);
    printf("claim timeout of 300 ms returned after %.0f ms\n", waited);

    /* A claim freed without completing or releasing is released: another consumer gets it. */
    zooid_claim_free(second);
    second = claim_expect(queue, "sixteen bytes!!!", b);
    CHECK_OK(zooid_claim_complete(second));
    zooid_claim_free(second);
    CHECK_OK(zooid_claim_complete(third));
    zooid_claim_free(third);
    /* Claims outlive their queue handle. */
    zooid_queue *other = NULL;
    CHECK_OK(zooid_queue_open(service, path, NULL, &other));
    zooid_queue_free(queue);
    queue = other;
    CHECK_OK(zooid_claim_complete(fourth));
    zooid_claim_free(fourth);
    EXPECT_STATUS(ZOOID_STATUS_TIMEOUT, zooid_queue_claim(queue, 0, &none));

    /* A waiting consumer gets the next put (the short pause only makes it likely that the
     * claim is already waiting; the outcome is the same either way). */
    struct waiter w = {.queue = queue, .status = ZOOID_STATUS_OTHER, .claim = NULL};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, wait_for_item, &w) == 0);
    nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000}, NULL);
    CHECK_OK(zooid_queue_put(queue, NULL, 0, NULL, 0, NULL)); /* an empty item */
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_OK(w.status);
    CHECK_OK(zooid_claim_data(w.claim, &data, &len));
    CHECK_EQ(0, len);
    CHECK_OK(zooid_claim_complete(w.claim));
    zooid_claim_free(w.claim);

    /* Threads share one queue: every item is completed exactly once. */
    struct consumers shared = {.queue = queue};
    CHECK(pthread_mutex_init(&shared.lock, NULL) == 0);
    zooid_queue_options *roomy = NULL;
    CHECK_OK(zooid_queue_options_new(&roomy));
    zooid_queue *producer = NULL;
    CHECK_OK(zooid_queue_open(service, path, roomy, &producer));
    zooid_queue_options_free(roomy);
    for (int i = 0; i < SHARED_ITEMS; i++) {
        CHECK_OK(zooid_queue_put(producer, (const uint8_t *)&i, sizeof i, NULL, 0, NULL));
    }
    pthread_t consumers[CONSUMERS];
    for (int t = 0; t < CONSUMERS; t++) {
        CHECK(pthread_create(&consumers[t], NULL, consume, &shared) == 0);
    }
    for (int t = 0; t < CONSUMERS; t++) {
        CHECK(pthread_join(consumers[t], NULL) == 0);
    }
    for (int i = 0; i < SHARED_ITEMS; i++) {
        CHECK_EQ(1, shared.completed[i]);
    }
    pthread_mutex_destroy(&shared.lock);
    zooid_queue_free(producer);
    printf("%d threads completed %d items, each once\n", CONSUMERS, SHARED_ITEMS);

    /* NULL handles and out-parameters. */
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_claim(NULL, 0, &none));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_queue_claim(queue, 0, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_claim_complete(NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_claim_release(NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_claim_data(NULL, &data, &len));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_claim_item(NULL, NULL, 0, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_claim_sequence(NULL, &seq_a));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_claim_is_lost(NULL, &lost));
    zooid_claim_free(NULL);
    zooid_queue_free(NULL);

    zooid_queue_free(queue);
    zooid_service_free(service);
    printf("queue OK\n");
    return 0;
}
