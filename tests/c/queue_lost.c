/*
 * A claim lost with its ZooKeeper session, from C. Driven by tests/c_queue.rs over stdin/stdout:
 *
 *   queue_lost CONNECT PATH
 *
 * 1. puts an item, claims it, prints "CLAIMED <item>" and waits for a line on stdin (the test then
 *    cuts the connection off past the session timeout);
 * 2. waits for zooid_claim_is_lost, prints "LOST <ms>" and waits for a line on stdin (the test
 *    heals the connection and claims the item itself);
 * 3. completes its claim, which must fail with ZOOID_STATUS_SESSION_LOST, and prints "lost OK".
 */
#include <time.h>

#include "check.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void wait_for_go(void) {
    char line[16];
    CHECK(fgets(line, sizeof line, stdin) != NULL);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CONNECT PATH\n", argv[0]);
        return 2;
    }
    zooid_options *options = NULL;
    CHECK_OK(zooid_options_new(&options));
    CHECK_OK(zooid_options_set_session_timeout_ms(options, 1500));
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], options, &service));
    zooid_options_free(options);
    zooid_queue *queue = NULL;
    CHECK_OK(zooid_queue_open(service, argv[2], NULL, &queue));

    char put[ZOOID_QUEUE_ITEM_NAME_MAX];
    CHECK_OK(zooid_queue_put(queue, (const uint8_t *)"job", 3, put, sizeof put, NULL));
    zooid_claim *claim = NULL;
    CHECK_OK(zooid_queue_claim(queue, 10000, &claim));
    char item[ZOOID_QUEUE_ITEM_NAME_MAX];
    CHECK_OK(zooid_claim_item(claim, item, sizeof item, NULL));
    CHECK(strcmp(item, put) == 0);
    printf("CLAIMED %s\n", item);
    fflush(stdout);
    wait_for_go();

    double started = now_ms();
    bool lost = false;
    while (!lost && now_ms() - started < 30000) {
        CHECK_OK(zooid_claim_is_lost(claim, &lost));
        if (!lost) {
            nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000}, NULL);
        }
    }
    CHECK(lost);
    printf("LOST %.0f\n", now_ms() - started);
    fflush(stdout);
    wait_for_go();

    EXPECT_STATUS(ZOOID_STATUS_SESSION_LOST, zooid_claim_complete(claim));
    CHECK_LAST_ERROR_CONTAINS("lost with its ZooKeeper session");
    /* The data is still there; the claim is finished. */
    const uint8_t *data = NULL;
    size_t len = 0;
    CHECK_OK(zooid_claim_data(claim, &data, &len));
    CHECK(len == 3 && memcmp(data, "job", 3) == 0);
    EXPECT_STATUS(ZOOID_STATUS_CLOSED, zooid_claim_release(claim));
    zooid_claim_free(claim);
    zooid_queue_free(queue);
    zooid_service_free(service);
    printf("lost OK\n");
    return 0;
}
