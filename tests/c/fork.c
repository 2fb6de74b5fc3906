/*
 * A process forked after zooid started gets ZOOID_STATUS_FORKED from every call, instead of
 * waiting for ever for the runtime threads that stayed in its parent, and what it frees of the
 * parent's does not touch the parent's session.
 *
 *   fork CONNECT CATEGORY
 *       The parent opens a service, creates CATEGORY, takes 100 IDs and opens a prefetching
 *       source from which it takes its first ID, then forks. The child: a take, a push of the
 *       inherited set, an ID from the inherited set or source (they are the parent's too) and a
 *       new service are refused with FORKED (the message names both processes), and freeing
 *       what it inherited returns. The parent then waits for the child, takes again on the same
 *       session (the child's free did not close it), gets the source's next ID, pushes the set
 *       and prints "ok".
 *       A child whose call hangs (what it did before) is ended by SIGALRM after 20 s, so the
 *       parent reports it and no process outlives the test.
 */
#include "check.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int child(const zooid_service *service, const char *connect, const char *category,
                 zooid_id_set *inherited, zooid_id_source *source) {
    alarm(20);
    char expected[128];
    snprintf(expected, sizeof expected, "zooid call made in process %ld, forked from process %ld",
             (long)getpid(), (long)getppid());
    zooid_id_set *ids = NULL;
    EXPECT_STATUS(ZOOID_STATUS_FORKED, zooid_service_take_ids(service, category, 10, &ids));
    CHECK(ids == NULL);
    CHECK_LAST_ERROR_CONTAINS(expected);
    EXPECT_STATUS(ZOOID_STATUS_FORKED, zooid_service_push_ids(service, inherited));
    /* The set's and the source's IDs are the parent's too (the source's batch was
     * prefetched: before, its next ID came from it, and so did the parent's). */
    int64_t id = 0;
    EXPECT_STATUS(ZOOID_STATUS_FORKED, zooid_id_source_next(source, &id));
    EXPECT_STATUS(ZOOID_STATUS_FORKED, zooid_id_source_try_next(source, &id));
    EXPECT_STATUS(ZOOID_STATUS_FORKED, zooid_id_set_take_id(inherited, &id));
    CHECK_LAST_ERROR_CONTAINS(expected);
    zooid_id_source_free(source);
    const zooid_service *second = NULL;
    EXPECT_STATUS(ZOOID_STATUS_FORKED, zooid_service_open(connect, NULL, &second));
    CHECK(second == NULL);
    zooid_id_set_free(inherited);
    zooid_service_free(service);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fork CONNECT CATEGORY\n");
        return 2;
    }
    const char *connect = argv[1], *category = argv[2];
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(connect, NULL, &service));
    CHECK_OK(create_default(service, category, 1, 1000000));
    zooid_id_set *ids = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 100, &ids));
    zooid_id_source *source = NULL;
    CHECK_OK(zooid_id_source_open(service, category, NULL, &source));
    int64_t first = 0, second = 0;
    CHECK_OK(zooid_id_source_next(source, &first));
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        _exit(child(service, connect, category, ids, source));
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "the forked child was ended by signal %d (%s)\n", WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? "a call hung for 20 s" : "a crash");
        return 1;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    zooid_id_set *more = NULL;
    CHECK_OK(zooid_service_take_ids(service, category, 10, &more));
    CHECK_OK(zooid_id_source_next(source, &second));
    CHECK_EQ(first + 1, second);
    CHECK_OK(zooid_id_source_close(source));
    zooid_id_source_free(source);
    CHECK_OK(zooid_service_push_ids(service, ids));
    CHECK_OK(zooid_service_push_ids(service, more));
    zooid_id_set_free(ids);
    zooid_id_set_free(more);
    zooid_service_free(service);
    printf("ok\n");
    return 0;
}
