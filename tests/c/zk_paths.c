/*
 * Paths with a character ZooKeeper refuses (a control character, a private-use character,
 * one above U+FFFF) are a bad argument, named as such on every store: the category calls,
 * a queue, a counter and an election group all say ZOOID_STATUS_INVALID_ARGUMENT and name
 * the character. (They were a store error on ZooKeeper, or, above U+FFFF, a lost connection,
 * and worked on the embedded stores.)
 *
 *   zk_paths CONNECT PREFIX
 */
#include "check.h"

struct bad_path {
    const char *suffix;
    const char *named;
};

static const struct bad_path BAD[] = {
    {"/tab\there", "U+0009"},
    {"/private\xee\x80\x80", "U+E000"},
    {"/emoji\xf0\x9f\x98\x80", "U+1F600"},
};

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CONNECT PREFIX\n", argv[0]);
        return 2;
    }
    int zookeeper = strncmp(argv[1], "mem:", 4) != 0 && strncmp(argv[1], "file:", 5) != 0;
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], NULL, &service));
    zooid_category_spec *spec = NULL;
    CHECK_OK(zooid_category_spec_new(1, 100, &spec));
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s%s", argv[2], BAD[i].suffix);
        EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                      zooid_service_create_category(service, path, spec));
        CHECK_LAST_ERROR_CONTAINS(BAD[i].named);
        CHECK_LAST_ERROR_CONTAINS("category path");
        zooid_id_set *set = NULL;
        EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                      zooid_service_take_ids(service, path, 1, &set));
        CHECK_LAST_ERROR_CONTAINS(BAD[i].named);
        CHECK(set == NULL);
        zooid_pool_info *info = NULL;
        EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                      zooid_service_pool_info(service, path, &info));
        CHECK_LAST_ERROR_CONTAINS(BAD[i].named);
        if (!zookeeper) {
            continue; /* the recipes need a ZooKeeper session */
        }
        zooid_queue *queue = NULL;
        EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                      zooid_queue_open(service, path, NULL, &queue));
        CHECK_LAST_ERROR_CONTAINS(BAD[i].named);
        zooid_counter *counter = NULL;
        EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                      zooid_counter_open(service, path, &counter));
        CHECK_LAST_ERROR_CONTAINS(BAD[i].named);
        zooid_election *election = NULL;
        EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                      zooid_election_join(service, path, "c", NULL, 0, ZOOID_PAUSE_KEEP,
                                          &election));
        CHECK_LAST_ERROR_CONTAINS(BAD[i].named);
    }
    /* The same category without the character is fine. */
    char good[256];
    snprintf(good, sizeof good, "%s/plain\xc3\xa9", argv[2]);
    CHECK_OK(zooid_service_create_category(service, good, spec));
    zooid_id_set *set = NULL;
    CHECK_OK(zooid_service_take_ids(service, good, 3, &set));
    CHECK_OK(zooid_service_push_ids(service, set));
    zooid_id_set_free(set);
    zooid_category_spec_free(spec);
    zooid_service_free(service);
    printf("zk_paths OK\n");
    return 0;
}
