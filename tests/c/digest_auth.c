/*
 * ZooKeeper digest authentication set through zooid_options: a category created by an
 * authenticated service is usable by the same user and refused (ZOOID_STATUS_NOT_AUTHORIZED) to a
 * service without authentication or with the wrong password.
 *
 *   digest_auth CONNECT CATEGORY
 */
#include "check.h"

static const zooid_service *open_as(const char *connect, const char *user, const char *password) {
    zooid_options *options = NULL;
    CHECK_OK(zooid_options_new(&options));
    CHECK_OK(zooid_options_set_session_timeout_ms(options, 4000));
    CHECK_OK(zooid_options_set_retry_deadline_ms(options, 5000));
    if (user != NULL) {
        CHECK_OK(zooid_options_set_digest_auth(options, user, password));
    }
    const zooid_service *service = NULL;
    CHECK_OK(zooid_service_open(connect, options, &service));
    zooid_options_free(options);
    return service;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CONNECT CATEGORY\n", argv[0]);
        return 2;
    }
    const char *connect = argv[1], *category = argv[2];

    const zooid_service *owner = open_as(connect, "eventpublish", "s3cret");
    CHECK_OK(create_default(owner, category, 1, 1000));
    zooid_id_set *set = NULL;
    CHECK_OK(zooid_service_take_ids(owner, category, 5, &set));
    zooid_id_set_free(set);

    const zooid_service *anonymous = open_as(connect, NULL, NULL);
    set = NULL;
    EXPECT_STATUS(ZOOID_STATUS_NOT_AUTHORIZED, zooid_service_take_ids(anonymous, category, 5, &set));
    CHECK(set == NULL);
    zooid_service_free(anonymous);

    const zooid_service *impostor = open_as(connect, "eventpublish", "guess");
    EXPECT_STATUS(ZOOID_STATUS_NOT_AUTHORIZED, zooid_service_take_ids(impostor, category, 5, &set));
    CHECK(set == NULL);
    zooid_service_free(impostor);

    /* The owner still takes where it left off. */
    CHECK_OK(zooid_service_take_ids(owner, category, 5, &set));
    int64_t id = 0;
    CHECK_OK(zooid_id_set_take_id(set, &id));
    CHECK_EQ(6, id);
    zooid_id_set_free(set);
    zooid_service_free(owner);
    printf("digest auth OK\n");
    return 0;
}
