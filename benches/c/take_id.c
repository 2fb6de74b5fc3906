/*
 * ns per ID of taking IDs one by one from a local ID set through the C ABI, for
 * benches/c_abi.rs (which compiles this at -O2 against the shared and the static library and
 * prints it next to the Rust figure of the same run). Also compiled and run small by
 * tests/c_abi.rs so that it keeps building.
 *
 *   take_id CONNECT IDS ROUNDS
 *
 * Prints, for the median round:
 *   take_id_ns <ns per ID through zooid_id_set_take_id>
 *   take_range_ns <ns per ID through zooid_id_set_take_range runs of 1024, each a plain loop>
 *   plain_loop_ns <ns per ID of a plain C loop over the same range, the floor>
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "zooid.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, zooid_status status) {
    char message[512];
    zooid_last_error_message(message, sizeof message, NULL);
    fprintf(stderr, "%s: %s: %s\n", what, zooid_status_name(status), message);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s CONNECT IDS ROUNDS\n", argv[0]);
        return 2;
    }
    long long ids = atoll(argv[2]);
    int rounds = atoi(argv[3]);
    if (ids < 1 || ids > 2147483647LL || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "IDS must be 1..2^31-1, ROUNDS 1..1000\n");
        return 2;
    }
    const zooid_service *service = NULL;
    zooid_status status = zooid_service_open(argv[1], NULL, &service);
    if (status != ZOOID_STATUS_OK) die("open", status);
    zooid_category_spec *spec = NULL;
    status = zooid_category_spec_new(1, (int64_t)1 << 50, &spec);
    if (status != ZOOID_STATUS_OK) die("spec", status);
    status = zooid_service_create_category(service, "/bench/c", spec);
    zooid_category_spec_free(spec);
    if (status != ZOOID_STATUS_OK) die("create", status);

    double *take = malloc(sizeof(double) * (size_t)rounds);
    double *plain = malloc(sizeof(double) * (size_t)rounds);
    double *bulk = malloc(sizeof(double) * (size_t)rounds);
    if (take == NULL || plain == NULL || bulk == NULL) return 1;
    for (int round = 0; round < rounds; round++) {
        zooid_id_set *set = NULL;
        status = zooid_service_take_ids(service, "/bench/c", (uint64_t)ids, &set);
        if (status != ZOOID_STATUS_OK) die("take", status);
        zooid_range range;
        size_t n = 0;
        status = zooid_id_set_ranges(set, &range, 1, &n);
        if (status != ZOOID_STATUS_OK || n != 1) die("ranges", status);

        /* Through the C ABI, as a C caller writes it. */
        int64_t id = 0, sum = 0, count = 0;
        double t = now_ns();
        while (zooid_id_set_take_id(set, &id) == ZOOID_STATUS_OK) {
            sum += id;
            count++;
        }
        take[round] = (now_ns() - t) / (double)count;
        /* The IDs are consecutive: check the sum, which also keeps the loop from vanishing. */
        int64_t want = (range.start + range.end) * (range.end - range.start + 1) / 2;
        if (count != ids || sum != want) {
            fprintf(stderr, "took %lld IDs summing to %lld, expected %lld summing to %lld\n",
                    (long long)count, (long long)sum, ids, (long long)want);
            return 1;
        }

        /* In bulk: runs of up to 1024 IDs, each iterated with a plain loop. */
        zooid_id_set_free(set);
        status = zooid_service_take_ids(service, "/bench/c", (uint64_t)ids, &set);
        if (status != ZOOID_STATUS_OK) die("take", status);
        status = zooid_id_set_ranges(set, &range, 1, &n);
        if (status != ZOOID_STATUS_OK || n != 1) die("ranges", status);
        zooid_range run;
        sum = 0;
        count = 0;
        t = now_ns();
        while (zooid_id_set_take_range(set, 1024, &run) == ZOOID_STATUS_OK) {
            for (int64_t i = run.start; i <= run.end; i++) {
                sum += i;
                count++;
            }
        }
        bulk[round] = (now_ns() - t) / (double)count;
        want = (range.start + range.end) * (range.end - range.start + 1) / 2;
        if (count != ids || sum != want) {
            fprintf(stderr, "bulk: took %lld IDs summing to %lld, expected %lld summing to %lld\n",
                    (long long)count, (long long)sum, ids, (long long)want);
            return 1;
        }

        /* The floor: a plain loop over the same IDs. */
        volatile int64_t sink = 0;
        int64_t plain_sum = 0;
        t = now_ns();
        for (int64_t i = range.start; i <= range.end; i++) {
            plain_sum += i;
            sink = plain_sum;
        }
        plain[round] = (now_ns() - t) / (double)count;
        (void)sink;
        zooid_id_set_free(set);
    }
    qsort(take, (size_t)rounds, sizeof *take, compare_doubles);
    qsort(plain, (size_t)rounds, sizeof *plain, compare_doubles);
    qsort(bulk, (size_t)rounds, sizeof *bulk, compare_doubles);
    printf("take_id_ns %.3f\ntake_range_ns %.3f\nplain_loop_ns %.3f\n", take[rounds / 2],
           bulk[rounds / 2], plain[rounds / 2]);
    free(bulk);
    free(take);
    free(plain);
    zooid_service_free(service);
    return 0;
}
