/*
 * The CAS counter from C.
 *
 *   counter basic CONNECT PREFIX
 *       init, next, get, and the error paths (n = 0, overflow, missing node, init on an
 *       existing node, a node that is not 8 bytes at PREFIX/text, an embedded store).
 *   counter lost CONNECT PATH
 *       Opens (2 s session), inits PATH at 0, takes 1, prints "READY" and waits for a line on
 *       stdin, during which the test's proxy is set to swallow the reply to the counter's write
 *       and to send every reconnect nowhere: next(5) must fail with
 *       ZOOID_STATUS_OUTCOME_UNKNOWN naming exactly 2..6 as skipped.
 */
#include "check.h"

static void basic(const char *connect, const char *prefix) {
    char path[512];
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(connect, NULL, &service));

    zooid_counter *counter = NULL;
    CHECK_OK(zooid_counter_open(service, join_path(path, sizeof path, prefix, "/c"), &counter));
    CHECK_OK(zooid_counter_init(counter, 100));
    int64_t first = 0, last = 0, value = 0;
    CHECK_OK(zooid_counter_next(counter, 1, &first, &last));
    CHECK_EQ(101, first);
    CHECK_EQ(101, last);
    CHECK_OK(zooid_counter_next(counter, 10, &first, &last));
    CHECK_EQ(102, first);
    CHECK_EQ(111, last);
    CHECK_OK(zooid_counter_get(counter, &value));
    CHECK_EQ(111, value);

    /* Bad arguments: nothing written, out-parameters untouched. */
    first = last = -7;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_counter_next(counter, 0, &first, &last));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_counter_next(counter, UINT64_MAX, &first, &last));
    CHECK_LAST_ERROR_CONTAINS("i64::MAX");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_counter_next(counter, 1, NULL, &last));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_counter_next(NULL, 1, &first, &last));
    CHECK_EQ(-7, first);
    CHECK_EQ(-7, last);
    EXPECT_STATUS(ZOOID_STATUS_CATEGORY_EXISTS, zooid_counter_init(counter, 0));
    CHECK_OK(zooid_counter_get(counter, &value));
    CHECK_EQ(111, value);
    zooid_counter_free(counter);

    /* Missing node. */
    CHECK_OK(zooid_counter_open(service, join_path(path, sizeof path, prefix, "/missing"),
                                &counter));
    EXPECT_STATUS(ZOOID_STATUS_NOT_FOUND, zooid_counter_next(counter, 1, &first, &last));
    EXPECT_STATUS(ZOOID_STATUS_NOT_FOUND, zooid_counter_get(counter, &value));
    zooid_counter_free(counter);

    /* A node that is not 8 bytes (written by the test). */
    CHECK_OK(zooid_counter_open(service, join_path(path, sizeof path, prefix, "/text"), &counter));
    EXPECT_STATUS(ZOOID_STATUS_CORRUPT_POOL, zooid_counter_next(counter, 1, &first, &last));
    CHECK_LAST_ERROR_CONTAINS("/text");
    zooid_counter_free(counter);

    /* Bad path; NULLs. */
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_counter_open(service, "relative", &counter));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_counter_open(service, NULL, &counter));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_counter_open(NULL, "/x", &counter));
    zooid_counter_free(NULL);
    zooid_service_free(service);

    /* The embedded stores have no ZooKeeper session. */
    CHECK_OK(zooid_service_open("mem:", NULL, &service));
    counter = NULL;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_counter_open(service, "/c", &counter));
    CHECK(counter == NULL);
    zooid_service_free(service);
    printf("counter basic OK\n");
}

static void lost(const char *connect, const char *path) {
    zooid_options *options = NULL;
    CHECK_OK(zooid_options_new(&options));
    CHECK_OK(zooid_options_set_session_timeout_ms(options, 2000));
    CHECK_OK(zooid_options_set_retry_deadline_ms(options, 10000));
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(connect, options, &service));
    zooid_options_free(options);
    zooid_counter *counter = NULL;
    CHECK_OK(zooid_counter_open(service, path, &counter));
    CHECK_OK(zooid_counter_init(counter, 0));
    int64_t first = 0, last = 0;
    CHECK_OK(zooid_counter_next(counter, 1, &first, &last));
    CHECK_EQ(1, first);

    printf("READY\n");
    fflush(stdout);
    char line[16];
    CHECK(fgets(line, sizeof line, stdin) != NULL);

    first = last = -7;
    EXPECT_STATUS(ZOOID_STATUS_OUTCOME_UNKNOWN, zooid_counter_next(counter, 5, &first, &last));
    CHECK_EQ(-7, first);
    size_t count = 0;
    CHECK_OK(zooid_last_error_ranges(NULL, 0, &count));
    CHECK_EQ(1, count);
    zooid_range skipped[1];
    CHECK_OK(zooid_last_error_ranges(skipped, 1, &count));
    CHECK_EQ(2, skipped[0].start);
    CHECK_EQ(6, skipped[0].end);
    zooid_counter_free(counter);
    zooid_service_free(service);
    printf("counter lost OK: ZOOID_STATUS_OUTCOME_UNKNOWN skipped %lld:%lld\n",
           (long long)skipped[0].start, (long long)skipped[0].end);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s basic|lost CONNECT PATH\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "basic") == 0) {
        basic(argv[2], argv[3]);
    } else if (strcmp(argv[1], "lost") == 0) {
        lost(argv[2], argv[3]);
    } else {
        fprintf(stderr, "unknown mode %s\n", argv[1]);
        return 2;
    }
    return 0;
}
