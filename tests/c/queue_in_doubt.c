/*
 * A queue put whose outcome cannot be told, from C (driven by tests/c/in_doubt.rs):
 *
 *   queue_in_doubt CONNECT PATH
 *
 * Opens a service (2 s session) and the queue at PATH (operation timeout 5 s), puts one item,
 * prints "READY" and waits for a line on stdin, during which the test's proxy is set to swallow
 * the reply to the next put and to send every reconnect nowhere. That put must fail with
 * ZOOID_STATUS_OUTCOME_UNKNOWN (the item may or may not be in the queue), not with
 * ZOOID_STATUS_TIMEOUT (which says nothing was changed), and name no IDs.
 */
#include "check.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CONNECT PATH\n", argv[0]);
        return 2;
    }
    zooid_options *options = NULL;
    CHECK_OK(zooid_options_new(&options));
    CHECK_OK(zooid_options_set_session_timeout_ms(options, 2000));
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(argv[1], options, &service));
    zooid_options_free(options);
    zooid_queue_options *queue_options = NULL;
    CHECK_OK(zooid_queue_options_new(&queue_options));
    CHECK_OK(zooid_queue_options_set_op_timeout_ms(queue_options, 5000));
    zooid_queue *queue = NULL;
    CHECK_OK(zooid_queue_open(service, argv[2], queue_options, &queue));
    zooid_queue_options_free(queue_options);

    char name[ZOOID_QUEUE_ITEM_NAME_MAX];
    CHECK_OK(zooid_queue_put(queue, (const uint8_t *)"first", 5, name, sizeof name, NULL));
    printf("READY\n");
    fflush(stdout);
    char line[16];
    CHECK(fgets(line, sizeof line, stdin) != NULL);

    size_t full = 77;
    EXPECT_STATUS(ZOOID_STATUS_OUTCOME_UNKNOWN,
                  zooid_queue_put(queue, (const uint8_t *)"held", 4, name, sizeof name, &full));
    CHECK_EQ(77, full);
    CHECK_LAST_ERROR_CONTAINS("outcome of put unknown");
    size_t count = 99;
    CHECK_OK(zooid_last_error_ranges(NULL, 0, &count));
    CHECK_EQ(0, count);
    zooid_queue_free(queue);
    zooid_service_free(service);
    printf("put in doubt OK: ZOOID_STATUS_OUTCOME_UNKNOWN\n");
    return 0;
}
