/*
 * zooid_service_free closes the ZooKeeper session on the servers before it returns.
 *
 *   close CONNECT CATEGORY MODE
 *       MODE is "default" or "blocks". Opens a service with a 20 s session timeout, creates
 *       CATEGORY in that mode, takes 1,000 IDs five times and pushes back the last 100 of each
 *       (a task's leftovers), prints "ready" and waits for a line on stdin (the test counts the
 *       server's sessions meanwhile), then frees the service and exits at once. The test counts
 *       again after the exit: a session the free did not close would stay for 20 s.
 */
#include "check.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: close CONNECT CATEGORY default|blocks\n");
        return 2;
    }
    const char *category = argv[2];
    zooid_options *options = NULL;
    CHECK_OK(zooid_options_new(&options));
    CHECK_OK(zooid_options_set_session_timeout_ms(options, 20000));
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], options, &service));
    zooid_options_free(options);
    if (strcmp(argv[3], "blocks") == 0) {
        CHECK_OK(create_in(service, category, 1, 1000000, ZOOID_LAYOUT_HOLE_NODES, 1000));
    } else {
        CHECK_OK(create_default(service, category, 1, 1000000));
    }
    for (int round = 0; round < 5; round++) {
        zooid_id_set *ids = NULL;
        CHECK_OK(zooid_service_take_ids(service, category, 1000, &ids));
        for (int i = 0; i < 900; i++) {
            int64_t id = 0;
            CHECK_OK(zooid_id_set_take_id(ids, &id));
        }
        CHECK_OK(zooid_service_push_ids(service, ids));
        zooid_id_set_free(ids);
    }
    printf("ready\n");
    fflush(stdout);
    char line[16];
    CHECK(fgets(line, sizeof line, stdin) != NULL);
    zooid_service_free(service);
    printf("freed\n");
    return 0;
}
