// The header from C++: extern "C" linkage and the fixed-size status enum.
#include <cstdio>
#include <type_traits>

#include "zooid.h"

static_assert(sizeof(zooid_status) == 4, "zooid_status is 32 bits");
static_assert(std::is_same<std::underlying_type<zooid_status>::type, uint32_t>::value,
              "zooid_status is a uint32_t enum");

int main() {
    zooid_status status = ZOOID_STATUS_EXHAUSTED;
    std::printf("%s %u\n", zooid_status_name(status), static_cast<unsigned>(status));
    zooid_service_free(nullptr);
    return 0;
}
