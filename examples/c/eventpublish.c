/*
 * The eventpublish loop from the zooid design, in C: take IDs in batches, give one to each
 * event, and push back whatever is left at the end.
 *
 *   cc eventpublish.c $(pkg-config --cflags --libs zooid) -o eventpublish
 *   ./eventpublish mem:                      # in-process store, for a try-out
 *   ./eventpublish zk1:2181,zk2:2181/prod    # a ZooKeeper ensemble
 */
#include <stdio.h>

#include <zooid.h>

static const char *CATEGORY = "/eventpublish/idgen/did";

/* Prints what went wrong and returns 1. */
static int report(const char *what, zooid_status status) {
    char message[512];
    zooid_last_error_message(message, sizeof message, NULL);
    fprintf(stderr, "%s: %s: %s\n", what, zooid_status_name(status), message);
    return 1;
}

static void publish_event(int event, int64_t id) {
    if (event % 5000 == 0) {
        printf("event %d gets ID %lld\n", event, (long long)id);
    }
}

int main(int argc, char **argv) {
    const char *connect = argc > 1 ? argv[1] : "mem:";
    const zooid_service *service = NULL;
    zooid_status status = zooid_service_open(connect, NULL, &service);
    if (status != ZOOID_STATUS_OK) {
        return report("open", status);
    }
    /* Once per deployment; an existing category is kept as it is. */
    zooid_category_spec *spec = NULL;
    status = zooid_category_spec_new(1, 123456789, &spec);
    if (status == ZOOID_STATUS_OK) {
        status = zooid_service_create_category(service, CATEGORY, spec);
    }
    zooid_category_spec_free(spec);
    if (status != ZOOID_STATUS_OK && status != ZOOID_STATUS_CATEGORY_EXISTS) {
        zooid_service_free(service);
        return report("create category", status);
    }

    int events = 25000, failed = 0;
    zooid_id_set *ids = NULL;
    for (int event = 0; event < events; event++) {
        int64_t id = 0;
        /* Take a new batch when the current one is used up (or there is none yet). */
        if (ids == NULL || zooid_id_set_take_id(ids, &id) != ZOOID_STATUS_OK) {
            zooid_id_set_free(ids);
            ids = NULL;
            status = zooid_service_take_ids(service, CATEGORY, 10000, &ids);
            if (status != ZOOID_STATUS_OK) {
                failed = report("take IDs", status);
                break;
            }
            zooid_id_set_take_id(ids, &id); /* a fresh set holds at least one ID */
        }
        publish_event(event, id);
    }

    /* Push back the IDs not used, so that they are handed out again. */
    if (ids != NULL) {
        uint64_t unused = 0;
        zooid_id_set_count(ids, &unused);
        status = zooid_service_push_ids(service, ids);
        if (status != ZOOID_STATUS_OK) {
            failed = report("push IDs", status);
        } else {
            printf("pushed back %llu unused IDs\n", (unsigned long long)unused);
        }
        zooid_id_set_free(ids);
    }
    zooid_service_free(service);
    return failed;
}
