/*
 * Every error a C caller can provoke without a failing store: bad arguments (NULL pointers,
 * bad UTF-8, n == 0, bad paths and bounds, small buffers), a missing category, an existing
 * category, an exhausted category, a used-up ID set; and the last-error accessors themselves.
 * Out-parameters must stay untouched on failure.
 *
 *   errors CONNECT [PREFIX]
 */
#include <pthread.h>

#include "check.h"

/* A value no call may write on failure. */
#define SENTINEL ((void *)0x5a5a)

static void *fresh_thread_has_no_last_error(void *arg) {
    (void)arg;
    size_t len = 99;
    CHECK_OK(zooid_last_error_message(NULL, 0, &len));
    CHECK_EQ(0, len);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CONNECT [PREFIX]\n", argv[0]);
        return 2;
    }
    const char *prefix = argc > 2 ? argv[2] : "";
    char p1[512], p2[512], p3[512];
    const char *category = join_path(p1, sizeof p1, prefix, "/errors/did");
    const char *missing = join_path(p2, sizeof p2, prefix, "/errors/missing");
    const char *tiny = join_path(p3, sizeof p3, prefix, "/errors/tiny");
    const char bad_utf8[] = {'/', 'a', (char)0xff, (char)0xfe, 0};

    /* Status names. */
    CHECK(strcmp(zooid_status_name(ZOOID_STATUS_OK), "ZOOID_STATUS_OK") == 0);
    CHECK(strcmp(zooid_status_name(ZOOID_STATUS_CORRUPT_POOL), "ZOOID_STATUS_CORRUPT_POOL") == 0);
    CHECK(strcmp(zooid_status_name(ZOOID_STATUS_OTHER), "ZOOID_STATUS_OTHER") == 0);
    CHECK(strcmp(zooid_status_name(4000000000u), "ZOOID_STATUS_UNKNOWN") == 0);

    /* Options. */
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_options_new(NULL));
    CHECK_LAST_ERROR_CONTAINS("out_options is NULL");
    zooid_options *options = NULL;
    CHECK_OK(zooid_options_new(&options));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_options_set_session_timeout_ms(NULL, 5));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_options_set_session_timeout_ms(options, 0));
    CHECK_LAST_ERROR_CONTAINS("session timeout");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_options_set_retry_deadline_ms(options, 0));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_options_set_retry_max_attempts(options, 0));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_options_set_digest_auth(options, NULL, "pw"));
    CHECK_LAST_ERROR_CONTAINS("user is NULL");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_options_set_digest_auth(options, "u", NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_options_set_digest_auth(options, bad_utf8, "pw"));
    CHECK_LAST_ERROR_CONTAINS("not valid UTF-8");
    CHECK_OK(zooid_options_set_retry_deadline_ms(options, 10000));
    CHECK_OK(zooid_options_set_retry_max_attempts(options, 50));

    /* Opening. */
    const zooid_service *service = SENTINEL;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_open(NULL, options, &service));
    CHECK_LAST_ERROR_CONTAINS("connect is NULL");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_open(bad_utf8, options, &service));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_open("file:", options, &service));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_open("", options, &service));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_open(argv[1], options, NULL));
    CHECK(service == SENTINEL);
    CHECK_OK(zooid_service_open(argv[1], options, &service));
    zooid_options_free(options);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_clone(NULL, &service));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_clone(service, NULL));

    /* Creating categories. */
    zooid_category_spec *spec = SENTINEL;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_new(0, 9, &spec));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_new(10, 9, &spec));
    CHECK_LAST_ERROR_CONTAINS("bounds");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_category_spec_new(1, 9, NULL));
    CHECK_LAST_ERROR_CONTAINS("out_spec is NULL");
    CHECK(spec == SENTINEL);
    CHECK_OK(zooid_category_spec_new(1, 9, &spec));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_create_category(NULL, category, spec));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_create_category(service, NULL, spec));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_service_create_category(service, category, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_service_create_category(service, bad_utf8, spec));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_service_create_category(service, "no/leading/slash", spec));
    CHECK_LAST_ERROR_CONTAINS("must start with '/'");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_create_category(service, "/", spec));
    /* A path through the nodes zooid keeps below another category's pool node. */
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_service_create_category(
                      service, "/c/zooid-holes/h-0000000000000000001-0000000000000001000", spec));
    CHECK_LAST_ERROR_CONTAINS("zooid-holes");
    zooid_category_spec_free(spec);
    CHECK_OK(create_default(service, category, 1, 1000000));
    EXPECT_STATUS(ZOOID_STATUS_CATEGORY_EXISTS, create_default(service, category, 1, 5));
    CHECK_LAST_ERROR_CONTAINS(category);

    /* Taking. */
    zooid_id_set *set = SENTINEL;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_take_ids(NULL, category, 1, &set));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_take_ids(service, NULL, 1, &set));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_take_ids(service, category, 1, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_take_ids(service, category, 0, &set));
    CHECK_LAST_ERROR_CONTAINS("take of 0 IDs");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_service_take_ids(service, category, (uint64_t)1 << 31, &set));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_take_ids(service, bad_utf8, 1, &set));
    EXPECT_STATUS(ZOOID_STATUS_NOT_FOUND, zooid_service_take_ids(service, missing, 1, &set));
    CHECK_LAST_ERROR_CONTAINS(missing);
    CHECK(set == SENTINEL);

    /* An exhausted category: 1..5, taken as 3 + 2, then nothing. */
    CHECK_OK(create_default(service, tiny, 1, 5));
    zooid_id_set *first = NULL, *rest = NULL;
    CHECK_OK(zooid_service_take_ids(service, tiny, 3, &first));
    CHECK_OK(zooid_service_take_ids(service, tiny, 10, &rest));
    uint64_t count = 0;
    CHECK_OK(zooid_id_set_count(rest, &count));
    CHECK_EQ(2, count); /* fewer than asked for, since fewer remain */
    EXPECT_STATUS(ZOOID_STATUS_EXHAUSTED, zooid_service_take_ids(service, tiny, 1, &set));
    CHECK_LAST_ERROR_CONTAINS("exhausted");
    CHECK(set == SENTINEL);
    /* Pushing back brings them back, lowest first. */
    CHECK_OK(zooid_service_push_ids(service, rest));
    zooid_id_set_free(rest);
    CHECK_OK(zooid_service_take_ids(service, tiny, 10, &rest));
    zooid_range ranges[2];
    size_t n = 0;
    CHECK_OK(zooid_id_set_ranges(rest, ranges, 2, &n));
    CHECK_EQ(1, n);
    CHECK_EQ(4, ranges[0].start);
    CHECK_EQ(5, ranges[0].end);
    zooid_id_set_free(rest); /* dropped without a push: 4 and 5 are lost to the category */
    EXPECT_STATUS(ZOOID_STATUS_EXHAUSTED, zooid_service_take_ids(service, tiny, 1, &set));

    /* A used-up ID set. */
    int64_t id = -7;
    for (int64_t want = 1; want <= 3; want++) {
        CHECK_OK(zooid_id_set_take_id(first, &id));
        CHECK_EQ(want, id);
    }
    id = -7;
    EXPECT_STATUS(ZOOID_STATUS_EMPTY, zooid_id_set_take_id(first, &id));
    CHECK_EQ(-7, id);
    CHECK_LAST_ERROR_CONTAINS("no unused IDs");
    bool more = true;
    CHECK_OK(zooid_id_set_has_more(first, &more));
    CHECK(!more);
    CHECK_OK(zooid_id_set_count(first, &count));
    CHECK_EQ(0, count);
    CHECK_OK(zooid_id_set_ranges(first, NULL, 0, &n));
    CHECK_EQ(0, n);
    CHECK_OK(zooid_service_push_ids(service, first)); /* nothing left: a no-op */

    zooid_range run = {-1, -1};
    EXPECT_STATUS(ZOOID_STATUS_EMPTY, zooid_id_set_take_range(first, 10, &run));
    CHECK_EQ(-1, run.start);

    /* ID set arguments. */
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_take_range(NULL, 1, &run));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_take_range(first, 1, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_take_range(first, 0, &run));
    CHECK_LAST_ERROR_CONTAINS("max must be at least 1");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_take_id(NULL, &id));
    CHECK_LAST_ERROR_CONTAINS("set is NULL");
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_take_id(first, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_has_more(NULL, &more));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_has_more(first, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_count(NULL, &count));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_count(first, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_ranges(NULL, ranges, 2, &n));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_ranges(first, ranges, 2, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_category(NULL, NULL, 0, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_category(first, NULL, 4, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_push_ids(NULL, first));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_push_ids(service, NULL));
    zooid_id_set_free(first);

    /* A set taken from one store is refused by a service on another, where a category of the
     * same name hands out the same IDs: pushed there, they would be handed out twice. */
    if (strncmp(argv[1], "mem:", 4) == 0) {
        const zooid_service *other = NULL;
        CHECK_OK(zooid_service_open("mem:", NULL, &other));
        CHECK_OK(create_default(other, category, 1, 1000000));
        zooid_id_set *theirs = NULL, *ours = NULL;
        CHECK_OK(zooid_service_take_ids(other, category, 100000, &theirs)); /* 1..100000 there */
        CHECK_OK(zooid_service_take_ids(service, category, 3, &ours)); /* among them here */
        EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_push_ids(other, ours));
        CHECK_LAST_ERROR_CONTAINS("another store");
        CHECK_OK(zooid_service_push_ids(service, ours)); /* kept, and back where it came from */
        zooid_id_set_free(ours);
        zooid_id_set_free(theirs);
        zooid_service_free(other);
    }

    /* A buffer too small for the ranges: nothing is written. */
    zooid_id_set *gappy = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 10, &gappy));
    for (int i = 0; i < 5; i++) {
        CHECK_OK(zooid_id_set_take_id(gappy, &id));
    }
    CHECK_OK(zooid_service_push_ids(service, gappy)); /* 6..10 free again */
    zooid_id_set_free(gappy);
    zooid_id_set *hold = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 100, &hold)); /* 6..10, 11..105 */
    CHECK_OK(zooid_id_set_ranges(hold, NULL, 0, &n));
    CHECK_EQ(1, n); /* 6..10 and 11..105 are adjacent: one range */
    zooid_id_set *a = NULL, *b = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 3, &a)); /* 106..108 */
    CHECK_OK(zooid_service_take_ids(service, category, 3, &b)); /* 109..111 */
    CHECK_OK(zooid_service_push_ids(service, a));              /* 106..108 free */
    zooid_id_set *two = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 5, &two)); /* 106..108, 112..113 */
    CHECK_OK(zooid_id_set_ranges(two, NULL, 0, &n));
    CHECK_EQ(2, n);
    zooid_range one[1] = {{-1, -1}};
    n = 77;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_ranges(two, one, 1, &n));
    CHECK_LAST_ERROR_CONTAINS("2 are needed");
    CHECK_EQ(77, n);
    CHECK_EQ(-1, one[0].start);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_id_set_ranges(two, NULL, 1, &n));
    zooid_range both[2];
    CHECK_OK(zooid_id_set_ranges(two, both, 2, &n));
    CHECK_EQ(106, both[0].start);
    CHECK_EQ(108, both[0].end);
    CHECK_EQ(112, both[1].start);
    CHECK_EQ(113, both[1].end);
    /* A bulk take stops at the end of a range. */
    zooid_range run2;
    CHECK_OK(zooid_id_set_take_range(two, 100, &run2));
    CHECK_EQ(106, run2.start);
    CHECK_EQ(108, run2.end);
    CHECK_OK(zooid_id_set_take_range(two, UINT64_MAX, &run2));
    CHECK_EQ(112, run2.start);
    CHECK_EQ(113, run2.end);
    EXPECT_STATUS(ZOOID_STATUS_EMPTY, zooid_id_set_take_range(two, 1, &run2));
    /* Category copied like snprintf: cut short, always terminated, full length reported. */
    char small[5];
    size_t full = 0;
    CHECK_OK(zooid_id_set_category(two, small, sizeof small, &full));
    CHECK_EQ(strlen(category), full);
    CHECK(strncmp(small, category, 4) == 0 && small[4] == '\0');
    CHECK_OK(zooid_service_push_ids(service, two));
    CHECK_OK(zooid_service_push_ids(service, b));
    CHECK_OK(zooid_service_push_ids(service, hold));
    zooid_id_set_free(two);
    zooid_id_set_free(b);
    zooid_id_set_free(hold);
    zooid_id_set_free(a);

    /* Pool info. */
    zooid_pool_info *info = SENTINEL;
    EXPECT_STATUS(ZOOID_STATUS_NOT_FOUND, zooid_service_pool_info(service, missing, &info));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_pool_info(NULL, category, &info));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_service_pool_info(service, category, NULL));
    CHECK(info == SENTINEL);
    CHECK_OK(zooid_service_pool_info(service, category, &info));
    const zooid_range *free_ranges = NULL;
    CHECK_OK(zooid_pool_info_free_ranges(info, &free_ranges, &n));
    /* Used: 1-5 and the bulk-taken 106-108, 112-113; the rest was pushed back and merged. */
    CHECK_EQ(3, n);
    CHECK_EQ(6, free_ranges[0].start);
    CHECK_EQ(105, free_ranges[0].end);
    CHECK_EQ(109, free_ranges[1].start);
    CHECK_EQ(111, free_ranges[1].end);
    CHECK_EQ(114, free_ranges[2].start);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_free_ranges(NULL, &free_ranges, &n));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_free_ranges(info, NULL, &n));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_free_ranges(info, &free_ranges, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_free_count(NULL, &count));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_free_count(info, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_bounds(NULL, ranges));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_bounds(info, NULL));
    int32_t version = 0;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_node(NULL, &version, &full));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_node(info, NULL, &full));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_pool_info_node(info, &version, NULL));
    zooid_pool_info_free(info);

    /* The last-error accessors. */
    EXPECT_STATUS(ZOOID_STATUS_NOT_FOUND, zooid_service_take_ids(service, missing, 1, &set));
    size_t len = 0;
    CHECK_OK(zooid_last_error_message(NULL, 0, &len));
    CHECK(len > 8);
    char cut[8];
    memset(cut, 'x', sizeof cut);
    CHECK_OK(zooid_last_error_message(cut, sizeof cut, &full));
    CHECK_EQ(len, full);
    CHECK_EQ(7, strlen(cut));
    /* Failing itself does not replace the message. */
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_last_error_message(NULL, 4, &full));
    CHECK_LAST_ERROR_CONTAINS(missing);
    /* No leaked IDs for errors other than ZOOID_STATUS_OUTCOME_UNKNOWN. */
    n = 5;
    CHECK_OK(zooid_last_error_ranges(NULL, 0, &n));
    CHECK_EQ(0, n);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_last_error_ranges(ranges, 2, NULL));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_last_error_ranges(NULL, 2, &n));
    /* The last error is per thread. */
    pthread_t other;
    CHECK(pthread_create(&other, NULL, fresh_thread_has_no_last_error, NULL) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    CHECK_LAST_ERROR_CONTAINS(missing);

    /* Every free accepts NULL. */
    zooid_service_free(NULL);
    zooid_id_set_free(NULL);
    zooid_options_free(NULL);
    zooid_pool_info_free(NULL);

    zooid_service_free(service);
    printf("errors OK\n");
    return 0;
}
