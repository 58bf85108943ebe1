/* libFuzzer target: the policy parser must refuse or accept any input without crashing, leaking
 * or reading out of bounds; a refusal names the input and leaves the policy untouched, and an
 * accepted policy is within the documented ranges. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_policy p, before;
    ts_error err;
    memset(&p, 0x5a, sizeof p);
    before = p;
    /* the parser takes (text, len), so the input is deliberately not NUL-terminated */
    int rc = ts_policy_parse(&p, (const char *)data, size, "fuzz.yaml", &err);
    if (rc != TS_OK) {
        if (memcmp(&p, &before, sizeof p) != 0)
            abort();
        if (strncmp(err.text, "fuzz.yaml", 9) != 0)
            abort();
        return 0;
    }
    if (p.kind < TS_PLACE_COMPACT || p.kind > TS_PLACE_MEASURE_ONLY || p.cpus_per_rank < 1 ||
        p.ranks_per_core < 1 || p.ranks_per_node < 0 || (p.kind == TS_PLACE_BLOCK) != (p.block_size > 0) ||
        (p.cpus_per_rank > 1 && p.ranks_per_core > 1) || !(p.time_budget_ms >= 1) ||
        memchr(p.name, '\0', sizeof p.name) == NULL)
        abort();
    return 0;
}
