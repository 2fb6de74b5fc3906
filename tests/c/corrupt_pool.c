/*
 * A category whose pool node holds garbage (written by the Rust test) gives
 * ZOOID_STATUS_CORRUPT_POOL on take and on pool info, with the node's path in the message, and
 * the node is left as it is (the test checks that afterwards).
 *
 *   corrupt_pool CONNECT CATEGORY
 */
#include "check.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CONNECT CATEGORY\n", argv[0]);
        return 2;
    }
    const char *category = argv[2];
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], NULL, &service));

    zooid_id_set *set = NULL;
    EXPECT_STATUS(ZOOID_STATUS_CORRUPT_POOL, zooid_service_take_ids(service, category, 10, &set));
    CHECK_LAST_ERROR_CONTAINS(category);
    CHECK(set == NULL);
    zooid_pool_info *info = NULL;
    EXPECT_STATUS(ZOOID_STATUS_CORRUPT_POOL, zooid_service_pool_info(service, category, &info));
    CHECK(info == NULL);
    /* Creating it again does not reset it. */
    EXPECT_STATUS(ZOOID_STATUS_CATEGORY_EXISTS,
                  create_default(service, category, 1, 100));

    zooid_service_free(service);
    printf("corrupt pool OK\n");
    return 0;
}
