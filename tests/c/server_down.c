/*
 * A ZooKeeper server that goes away gives a clear status within the retry deadline.
 *
 *   server_down unreachable CONNECT
 *       Nothing listens at CONNECT: opening fails with ZOOID_STATUS_CONNECTION_LOST.
 *   server_down killed CONNECT CATEGORY
 *       Opens, creates CATEGORY, takes 10 IDs, prints "READY" and waits for a line on stdin,
 *       during which the test kills the server; the next take must fail with
 *       ZOOID_STATUS_CONNECTION_LOST, ZOOID_STATUS_TIMEOUT, or ZOOID_STATUS_OUTCOME_UNKNOWN
 *       naming the leaked IDs (which must lie after the 10 taken), within the deadline.
 *   server_down lost-reply CONNECT CATEGORY
 *       Like "killed", but on a category in the single-node layout (every take is a setData
 *       of the pool node), and the server stays up behind the test's proxy, which swallows the
 *       reply to the take's write and sends every reconnect nowhere: the take must fail with
 *       ZOOID_STATUS_OUTCOME_UNKNOWN naming exactly the IDs 11..20 as leaked.
 *
 * "killed" creates its category in the store's default layout (hole nodes on ZooKeeper).
 */
#include <time.h>

#include "check.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static zooid_options *short_options(void) {
    zooid_options *options = NULL;
    CHECK_OK(zooid_options_new(&options));
    CHECK_OK(zooid_options_set_session_timeout_ms(options, 2000));
    CHECK_OK(zooid_options_set_retry_deadline_ms(options, 3000));
    return options;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s unreachable|killed|lost-reply CONNECT [CATEGORY]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    zooid_options *options = short_options();
    const zooid_service *service = NULL;
    if (strcmp(mode, "unreachable") == 0) {
        double started = now_seconds();
        EXPECT_STATUS(ZOOID_STATUS_CONNECTION_LOST, zooid_service_open(argv[2], options, &service));
        CHECK(service == NULL);
        CHECK(now_seconds() - started < 20);
        zooid_options_free(options);
        printf("unreachable OK\n");
        return 0;
    }
    int lost_reply = strcmp(mode, "lost-reply") == 0;
    CHECK(argc > 3 && (lost_reply || strcmp(mode, "killed") == 0));
    const char *category = argv[3];
    CHECK_OK(zooid_service_open(argv[2], options, &service));
    zooid_options_free(options);
    uint32_t layout = lost_reply ? ZOOID_LAYOUT_SINGLE_NODE : ZOOID_LAYOUT_DEFAULT;
    CHECK_OK(create_in(service, category, 1, 1000, layout, 0));
    zooid_id_set *warm = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 10, &warm));

    printf("READY\n");
    fflush(stdout);
    char line[16];
    CHECK(fgets(line, sizeof line, stdin) != NULL);

    double started = now_seconds();
    zooid_id_set *set = NULL;
    zooid_status status = zooid_service_take_ids(service, category, 10, &set);
    double took = now_seconds() - started;
    fprintf(stderr, "take after the server went away: %s after %.1f s\n",
            zooid_status_name(status), took);
    print_last_error(stderr);
    CHECK(set == NULL);
    CHECK(took < 20);
    size_t n = 0;
    CHECK_OK(zooid_last_error_ranges(NULL, 0, &n));
    if (lost_reply) {
        EXPECT_STATUS(ZOOID_STATUS_OUTCOME_UNKNOWN, status);
    }
    if (status == ZOOID_STATUS_OUTCOME_UNKNOWN) {
        CHECK_LAST_ERROR_CONTAINS("leaked");
        CHECK(n >= 1 && n <= 4);
        zooid_range leaked[4];
        CHECK_OK(zooid_last_error_ranges(leaked, 4, &n));
        CHECK_EQ(11, leaked[0].start);
        CHECK_EQ(20, leaked[n - 1].end);
    } else {
        CHECK(status == ZOOID_STATUS_CONNECTION_LOST || status == ZOOID_STATUS_TIMEOUT);
        CHECK_EQ(0, n);
    }
    /* The warm set is still usable locally. */
    int64_t id = 0;
    CHECK_OK(zooid_id_set_take_id(warm, &id));
    CHECK_EQ(1, id);
    zooid_id_set_free(warm);
    zooid_service_free(service);
    printf("%s OK: %s\n", mode, zooid_status_name(status));
    return 0;
}
