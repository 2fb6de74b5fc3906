/* Shared by the C test programs: checks that print the status name and the last error. */
#ifndef ZOOID_TEST_CHECK_H
#define ZOOID_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zooid.h"

static inline void print_last_error(FILE *to) {
    char message[1024];
    size_t full = 0;
    if (zooid_last_error_message(message, sizeof message, &full) == ZOOID_STATUS_OK) {
        fprintf(to, "  last error: %s%s\n", message, full >= sizeof message ? " [...]" : "");
    }
}

static inline void fail_status(const char *file, int line, const char *call, zooid_status expected,
                        zooid_status got) {
    fprintf(stderr, "%s:%d: %s\n  expected %s, got %s\n", file, line, call,
            zooid_status_name(expected), zooid_status_name(got));
    print_last_error(stderr);
    exit(1);
}

/* The call must return `expected`. */
#define EXPECT_STATUS(expected, call)                                        \
    do {                                                                     \
        zooid_status got_ = (call);                                          \
        if (got_ != (expected)) {                                            \
            fail_status(__FILE__, __LINE__, #call, (expected), got_);        \
        }                                                                    \
    } while (0)

/* The call must succeed. */
#define CHECK_OK(call) EXPECT_STATUS(ZOOID_STATUS_OK, call)

/* A plain condition. */
#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* Two 64-bit integers must be equal. */
#define CHECK_EQ(expected, got)                                                  \
    do {                                                                         \
        long long e_ = (long long)(expected), g_ = (long long)(got);             \
        if (e_ != g_) {                                                          \
            fprintf(stderr, "%s:%d: %s == %s failed: expected %lld, got %lld\n", \
                    __FILE__, __LINE__, #expected, #got, e_, g_);                \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

/* The last error's message must contain `needle`. */
#define CHECK_LAST_ERROR_CONTAINS(needle)                                            \
    do {                                                                             \
        char msg_[1024];                                                             \
        CHECK_OK(zooid_last_error_message(msg_, sizeof msg_, NULL));                 \
        if (strstr(msg_, (needle)) == NULL) {                                        \
            fprintf(stderr, "%s:%d: last error \"%s\" lacks \"%s\"\n", __FILE__,     \
                    __LINE__, msg_, (needle));                                       \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

/* Creates `path` with IDs first..last in the layout numbered `layout` (a `zooid_layout`, in blocks
 * of `unit`), through a `zooid_category_spec`; returns the first status that is not OK. */
static inline zooid_status create_in(const zooid_service *service, const char *path, int64_t first,
                                     int64_t last, uint32_t layout, uint64_t unit) {
    zooid_category_spec *spec = NULL;
    zooid_status status = zooid_category_spec_new(first, last, &spec);
    if (status == ZOOID_STATUS_OK) {
        status = zooid_category_spec_set_layout(spec, layout, unit);
    }
    if (status == ZOOID_STATUS_OK) {
        status = zooid_service_create_category(service, path, spec);
    }
    zooid_category_spec_free(spec);
    return status;
}

/* Creates `path` with IDs first..last in the store's default layout. */
static inline zooid_status create_default(const zooid_service *service, const char *path,
                                          int64_t first, int64_t last) {
    return create_in(service, path, first, last, ZOOID_LAYOUT_DEFAULT, 0);
}

/* Joins a prefix (may be empty) and a path into `buf`. */
static inline const char *join_path(char *buf, size_t len, const char *prefix, const char *path) {
    int n = snprintf(buf, len, "%s%s", prefix, path);
    CHECK(n > 0 && (size_t)n < len);
    return buf;
}

#endif /* ZOOID_TEST_CHECK_H */
