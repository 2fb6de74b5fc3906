/*
 * Leader election from C, against a real ZooKeeper (run by tests/election_c.rs).
 *
 *   election basic CONNECT GROUP
 *       Two candidates on two sessions of one process: exactly one Active; the other's waits
 *       time out; an observer sees the leader; the leader's fenced writes apply, a
 *       non-leader's are refused with ZOOID_STATUS_NOT_LEADER; resign hands the leadership
 *       over with a higher token, seen by the other candidate's blocking wait; the resigned
 *       handle reports CLOSED. Also the argument checks. Prints "basic OK".
 *   election expire PROXIED DIRECT GROUP
 *       Candidate A (2 s session) reaches ZooKeeper through the test's fault proxy at PROXIED,
 *       candidate B directly at DIRECT. A leads; the program prints "READY <token>" and waits
 *       for a line on stdin, while the test blackholes A's proxy. A goes Paused, then Inactive
 *       when its session is lost; B becomes Active with a higher token; A's fenced write, as
 *       an ex-leader, is refused with ZOOID_STATUS_NOT_LEADER and the resource keeps B's
 *       value. The program prints "EXPIRED" and waits for a second line (the test heals the
 *       proxy); A rejoins on a new session behind B, B resigns, A leads again with a token
 *       higher than B's. Prints "expire OK".
 */
#include <pthread.h>
#include <time.h>

#include "check.h"

/* A thread blocked in zooid_election_wait_change on a handle another thread resigns. */
struct waiter {
    const zooid_election *election;
    zooid_election_status seen;
    zooid_status status;
    double waited;
};

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *wait_for_change(void *arg) {
    struct waiter *w = arg;
    double started = now_seconds();
    /* Resigning may publish Inactive before the final closed status: wait for the latter. */
    do {
        w->status = zooid_election_wait_change(w->election, &w->seen, 20000, &w->seen);
    } while (w->status == ZOOID_STATUS_OK && !w->seen.closed);
    w->waited = now_seconds() - started;
    return NULL;
}

static const zooid_service *open_service(const char *connect, uint64_t session_ms) {
    zooid_options *options = NULL;
    CHECK_OK(zooid_options_new(&options));
    CHECK_OK(zooid_options_set_session_timeout_ms(options, session_ms));
    CHECK_OK(zooid_options_set_retry_deadline_ms(options, 3000));
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(connect, options, &service));
    zooid_options_free(options);
    return service;
}

static zooid_election *join(const zooid_service *service, const char *group, const char *name,
                            uint32_t policy) {
    zooid_election *election = NULL;
    CHECK_OK(zooid_election_join(service, group, name, (const uint8_t *)name, strlen(name), policy,
                                 &election));
    CHECK(election != NULL);
    return election;
}

/* Waits (blocking, in the library) until `election` is in `state`, for at most `seconds`;
 * returns its status then. */
static zooid_election_status wait_state(const zooid_election *election, zooid_leader_state state,
                                        double seconds) {
    zooid_election_status status;
    CHECK_OK(zooid_election_get_status(election, &status));
    double deadline = now_seconds() + seconds;
    while (status.state != state) {
        double left = deadline - now_seconds();
        if (left <= 0) {
            fprintf(stderr, "still %s after %.1f s, waiting for %s\n",
                    zooid_leader_state_name(status.state), seconds, zooid_leader_state_name(state));
            exit(1);
        }
        zooid_status got = zooid_election_wait_change(election, &status, (uint64_t)(left * 1000) + 1,
                                                      &status);
        CHECK(got == ZOOID_STATUS_OK || got == ZOOID_STATUS_TIMEOUT);
    }
    return status;
}

/* Expects the leader of `group`, seen by an observer, to be `name` with `token`. */
static void expect_leader(const zooid_service *service, const char *group, const char *name,
                          int64_t token) {
    zooid_leader_info *info = NULL;
    CHECK_OK(zooid_election_leader(service, group, &info));
    CHECK(info != NULL);
    CHECK(strcmp(info->name, name) == 0);
    CHECK_EQ(strlen(name), info->data_len);
    CHECK(memcmp(info->data, name, info->data_len) == 0);
    CHECK_EQ(token, info->token);
    CHECK(strncmp(info->node, group, strlen(group)) == 0);
    zooid_leader_info_free(info);
}

static void basic(const char *connect, const char *group) {
    const zooid_service *sa = open_service(connect, 6000);
    const zooid_service *sb = open_service(connect, 6000);
    char resource[256];
    join_path(resource, sizeof resource, group, "-resource");

    /* Nobody leads a group that does not exist yet. */
    zooid_leader_info *info = (zooid_leader_info *)1;
    CHECK_OK(zooid_election_leader(sb, group, &info));
    CHECK(info == NULL);

    /* Argument checks: out-parameters untouched on failure. */
    zooid_election *none = NULL;
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_election_join(NULL, group, "x", NULL, 0, ZOOID_PAUSE_KEEP, &none));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_election_join(sa, group, "", NULL, 0, ZOOID_PAUSE_KEEP, &none));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_election_join(sa, group, "two\nlines", NULL, 0, ZOOID_PAUSE_KEEP, &none));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_election_join(sa, "relative", "x", NULL, 0, ZOOID_PAUSE_KEEP, &none));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_election_join(sa, group, "x", NULL, 3, ZOOID_PAUSE_KEEP, &none));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_election_join(sa, group, "x", NULL, 0, 7, &none));
    CHECK_LAST_ERROR_CONTAINS("on_pause 7");
    static uint8_t big[64 * 1024 + 1];
    EXPECT_STATUS(ZOOID_STATUS_TOO_LARGE,
                  zooid_election_join(sa, group, "x", big, sizeof big, ZOOID_PAUSE_KEEP, &none));
    /* A length past the buffer (here SIZE_MAX) is refused before a byte is read. */
    EXPECT_STATUS(ZOOID_STATUS_TOO_LARGE,
                  zooid_election_join(sa, group, "x", big, SIZE_MAX, ZOOID_PAUSE_KEEP, &none));
    CHECK_LAST_ERROR_CONTAINS("candidate data (data)");
    CHECK(none == NULL);

    /* A joins first and leads. */
    zooid_election *a = join(sa, group, "alpha", ZOOID_PAUSE_STOP);
    int64_t token_a = 0;
    CHECK_OK(zooid_election_await_leadership(a, 20000, &token_a));
    CHECK(token_a > 0);
    zooid_leader_state state = ZOOID_LEADER_INACTIVE;
    int64_t token = -1;
    CHECK_OK(zooid_election_state(a, &state, &token));
    CHECK_EQ(ZOOID_LEADER_ACTIVE, state);
    CHECK_EQ(token_a, token);
    zooid_election_status status_a;
    CHECK_OK(zooid_election_get_status(a, &status_a));
    CHECK_EQ(1, status_a.terms);
    CHECK(!status_a.closed);
    /* The lease: positive while Active once the quorum confirmed twice, below half the session. */
    int64_t lease_ms = 0;
    for (int i = 0; i < 400 && lease_ms == 0; i++) {
        CHECK_OK(zooid_election_lease_remaining(a, &lease_ms));
        if (lease_ms == 0) {
            struct timespec step = {0, 25 * 1000 * 1000};
            nanosleep(&step, NULL);
        }
    }
    CHECK(lease_ms > 0 && lease_ms < 60000);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_election_lease_remaining(a, NULL));

    /* B joins behind A: Inactive; its waits time out. */
    zooid_election *b = join(sb, group, "beta", ZOOID_PAUSE_STOP);
    zooid_election_status status_b;
    CHECK_OK(zooid_election_get_status(b, &status_b));
    CHECK_EQ(ZOOID_LEADER_INACTIVE, status_b.state);
    CHECK_EQ(0, status_b.token);
    zooid_election_status untouched = status_b;
    double started = now_seconds();
    EXPECT_STATUS(ZOOID_STATUS_TIMEOUT, zooid_election_wait_change(b, &status_b, 300, &untouched));
    double waited = now_seconds() - started;
    CHECK(waited >= 0.29 && waited < 5);
    CHECK_EQ(status_b.state, untouched.state);
    CHECK_EQ(status_b.token, untouched.token);
    CHECK_EQ(status_b.session_generation, untouched.session_generation);
    int64_t token_b = -1;
    EXPECT_STATUS(ZOOID_STATUS_TIMEOUT, zooid_election_await_leadership(b, 200, &token_b));
    CHECK_EQ(-1, token_b);
    CHECK_OK(zooid_election_state(b, &state, NULL));
    CHECK_EQ(ZOOID_LEADER_INACTIVE, state);
    int64_t lease_b = -1;
    CHECK_OK(zooid_election_lease_remaining(b, &lease_b));
    CHECK_EQ(0, lease_b);
    zooid_election_status bad_last = status_b;
    memset(&bad_last.state, 0xff, sizeof bad_last.state);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_election_wait_change(b, &bad_last, 10, &untouched));
    expect_leader(sb, group, "alpha", token_a);

    /* Fenced writes: the leader's apply, versions are explicit. */
    CHECK_OK(zooid_election_fenced_create(a, resource, (const uint8_t *)"0", 1));
    int32_t version = -1;
    CHECK_OK(zooid_election_fenced_set_data(a, resource, (const uint8_t *)"a1", 2, 0, false,
                                            &version));
    CHECK_EQ(1, version);
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_election_fenced_set_data(a, resource, (const uint8_t *)"x", 1, -1, false,
                                                 &version));
    CHECK_LAST_ERROR_CONTAINS("any_version");
    EXPECT_STATUS(ZOOID_STATUS_TOO_LARGE,
                  zooid_election_fenced_set_data(a, resource, (const uint8_t *)"x", SIZE_MAX, 1,
                                                 false, &version));
    CHECK_LAST_ERROR_CONTAINS("fenced write data (data)");
    EXPECT_STATUS(ZOOID_STATUS_STORE,
                  zooid_election_fenced_set_data(a, resource, (const uint8_t *)"x", 1, 0, false,
                                                 &version));
    CHECK_EQ(1, version);
    CHECK_OK(zooid_election_fenced_set_data(a, resource, (const uint8_t *)"a2", 2, -1, true,
                                            NULL));
    EXPECT_STATUS(ZOOID_STATUS_STORE,
                  zooid_election_fenced_create(a, resource, (const uint8_t *)"0", 1));

    /* B does not lead: its fenced writes are refused, nothing is written. */
    EXPECT_STATUS(ZOOID_STATUS_NOT_LEADER,
                  zooid_election_fenced_set_data(b, resource, (const uint8_t *)"b", 1, 2, false,
                                                 &version));
    CHECK_EQ(1, version);
    EXPECT_STATUS(ZOOID_STATUS_NOT_LEADER, zooid_election_fenced_delete(b, resource, 0, true));

    /* A resigns while another thread waits on A: the waiter wakes with the closed status. */
    struct waiter w = {.election = a, .status = ZOOID_STATUS_OTHER};
    CHECK_OK(zooid_election_get_status(a, &w.seen));
    CHECK_EQ(ZOOID_LEADER_ACTIVE, w.seen.state);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, wait_for_change, &w) == 0);
    struct timespec settle = {0, 100 * 1000 * 1000};
    nanosleep(&settle, NULL); /* not needed for correctness: the wait returns at once anyway */
    CHECK_OK(zooid_election_resign(a));
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_EQ(ZOOID_STATUS_OK, w.status);
    CHECK(w.seen.closed);
    CHECK_EQ(ZOOID_LEADER_INACTIVE, w.seen.state);
    CHECK(w.waited < 10);

    /* B's blocking wait sees it become Active with a higher token. */
    CHECK_OK(zooid_election_resign(a));
    zooid_election_status after = wait_state(b, ZOOID_LEADER_ACTIVE, 20);
    token_b = after.token;
    CHECK(token_b > token_a);
    CHECK_EQ(1, after.terms);
    CHECK(after.watch_notifications >= 1);
    CHECK_OK(zooid_election_get_status(a, &status_a));
    CHECK_EQ(ZOOID_LEADER_INACTIVE, status_a.state);
    CHECK(status_a.closed);
    CHECK_EQ(0, status_a.token);
    expect_leader(sa, group, "beta", token_b);

    /* The resigned handle: closed for leadership, fenced writes and waits from a closed status. */
    EXPECT_STATUS(ZOOID_STATUS_CLOSED, zooid_election_await_leadership(a, 1000, &token));
    EXPECT_STATUS(ZOOID_STATUS_CLOSED,
                  zooid_election_fenced_set_data(a, resource, (const uint8_t *)"a3", 2, 2, false,
                                                 NULL));
    EXPECT_STATUS(ZOOID_STATUS_CLOSED, zooid_election_wait_change(a, &status_a, 5000, &status_a));

    /* The new leader writes; then deletes the resource with a fenced delete. */
    CHECK_OK(zooid_election_fenced_set_data(b, resource, (const uint8_t *)"b1", 2, 2, false,
                                            &version));
    CHECK_EQ(3, version);
    CHECK_OK(zooid_election_fenced_delete(b, resource, 3, false));

    /* Freeing without resigning leaves the group in the background. */
    zooid_election_free(b);
    zooid_election_free(a);
    zooid_election_free(NULL);
    zooid_leader_info_free(NULL);
    double deadline = now_seconds() + 20;
    for (;;) {
        CHECK_OK(zooid_election_leader(sa, group, &info));
        if (info == NULL) {
            break;
        }
        zooid_leader_info_free(info);
        CHECK(now_seconds() < deadline);
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }

    /* The embedded stores have no session. */
    const zooid_service *mem = NULL;
    CHECK_OK(zooid_service_open("mem:", NULL, &mem));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT,
                  zooid_election_join(mem, group, "x", NULL, 0, ZOOID_PAUSE_KEEP, &none));
    EXPECT_STATUS(ZOOID_STATUS_INVALID_ARGUMENT, zooid_election_leader(mem, group, &info));
    zooid_service_free(mem);

    zooid_service_free(sa);
    zooid_service_free(sb);
    printf("basic OK: tokens %lld then %lld\n", (long long)token_a, (long long)token_b);
}

static void read_line(void) {
    char line[64];
    CHECK(fgets(line, sizeof line, stdin) != NULL);
}

static void expire(const char *proxied, const char *direct, const char *group) {
    const zooid_service *sa = open_service(proxied, 2000);
    const zooid_service *sb = open_service(direct, 6000);
    char resource[256];
    join_path(resource, sizeof resource, group, "-resource");

    zooid_election *a = join(sa, group, "alpha", ZOOID_PAUSE_KEEP);
    int64_t token_a = 0;
    CHECK_OK(zooid_election_await_leadership(a, 20000, &token_a));
    zooid_election *b = join(sb, group, "beta", ZOOID_PAUSE_KEEP);
    CHECK_OK(zooid_election_fenced_create(a, resource, (const uint8_t *)"a", 1));
    zooid_election_status status_a;
    CHECK_OK(zooid_election_get_status(a, &status_a));
    uint64_t generation = status_a.session_generation;
    printf("READY %lld\n", (long long)token_a);
    fflush(stdout);
    read_line();

    /* A is cut off: Paused first (it may still lead), Inactive once its session is lost. */
    double started = now_seconds();
    zooid_election_status paused = wait_state(a, ZOOID_LEADER_PAUSED, 10);
    CHECK_EQ(token_a, paused.token);
    zooid_election_status lost = wait_state(a, ZOOID_LEADER_INACTIVE, 20);
    double inactive_after = now_seconds() - started;
    CHECK(!lost.closed);
    zooid_election_status now_b = wait_state(b, ZOOID_LEADER_ACTIVE, 30);
    double b_after = now_seconds() - started;
    CHECK(now_b.token > token_a);

    /* The ex-leader's fenced write is refused; the new leader's applies. */
    EXPECT_STATUS(ZOOID_STATUS_NOT_LEADER,
                  zooid_election_fenced_set_data(a, resource, (const uint8_t *)"a-late", 6, 0,
                                                 false, NULL));
    CHECK_LAST_ERROR_CONTAINS("not the leader");
    int32_t version = -1;
    CHECK_OK(zooid_election_fenced_set_data(b, resource, (const uint8_t *)"b", 1, 0, false,
                                            &version));
    CHECK_EQ(1, version);
    expect_leader(sb, group, "beta", now_b.token);
    printf("EXPIRED inactive after %.2f s, new leader after %.2f s\n", inactive_after, b_after);
    fflush(stdout);
    read_line();

    /* Healed: A rejoins on a new session, behind B; B resigns and A leads with a higher token. */
    double deadline = now_seconds() + 30;
    for (;;) {
        CHECK_OK(zooid_election_get_status(a, &status_a));
        if (status_a.session_generation > generation && status_a.state == ZOOID_LEADER_INACTIVE) {
            break;
        }
        CHECK(now_seconds() < deadline);
        zooid_status got = zooid_election_wait_change(a, &status_a, 500, &status_a);
        CHECK(got == ZOOID_STATUS_OK || got == ZOOID_STATUS_TIMEOUT);
    }
    /* Still behind B: B leads, A waits. */
    int64_t token = 0;
    EXPECT_STATUS(ZOOID_STATUS_TIMEOUT, zooid_election_await_leadership(a, 300, &token));
    CHECK_OK(zooid_election_resign(b));
    int64_t token_a2 = 0;
    CHECK_OK(zooid_election_await_leadership(a, 20000, &token_a2));
    CHECK(token_a2 > now_b.token);
    CHECK_OK(zooid_election_fenced_set_data(a, resource, (const uint8_t *)"a2", 2, 1, false,
                                            &version));
    CHECK_EQ(2, version);
    CHECK_OK(zooid_election_resign(a));
    zooid_election_free(a);
    zooid_election_free(b);
    zooid_service_free(sa);
    zooid_service_free(sb);
    printf("expire OK: tokens %lld, %lld, %lld\n", (long long)token_a, (long long)now_b.token,
           (long long)token_a2);
}

/* The lowest candidate of `group` was written by another client with a NUL byte in its name: the
 * leader cannot be returned as C strings, and that is the node's fault (CORRUPT_POOL naming it),
 * not the caller's (INVALID_ARGUMENT). */
static void foreign(const char *connect, const char *group) {
    const zooid_service *s = open_service(connect, 6000);
    zooid_leader_info *info = (zooid_leader_info *)1;
    EXPECT_STATUS(ZOOID_STATUS_CORRUPT_POOL, zooid_election_leader(s, group, &info));
    CHECK(info == (zooid_leader_info *)1);
    CHECK_LAST_ERROR_CONTAINS("NUL byte");
    CHECK_LAST_ERROR_CONTAINS(group);
    zooid_service_free(s);
    printf("foreign OK\n");
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "basic") == 0) {
        basic(argv[2], argv[3]);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "foreign") == 0) {
        foreign(argv[2], argv[3]);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "expire") == 0) {
        expire(argv[2], argv[3], argv[4]);
        return 0;
    }
    fprintf(stderr, "usage: %s basic CONNECT GROUP | foreign CONNECT GROUP | expire PROXIED DIRECT GROUP\n", argv[0]);
    return 2;
}
