/* libFuzzer target: the latency-parameter YAML parser must refuse or accept any input without
 * crashing, leaking or reading out of bounds, and must leave the params untouched on refusal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_model_params p, before;
    ts_error err;
    if (ts_model_params_profile(&p, "ethernet", &err) != TS_OK)
        abort();
    before = p;
    /* the parser takes (text, len), so the input is deliberately not NUL-terminated */
    int rc = ts_model_params_parse_yaml(&p, (const char *)data, size, "fuzz.yaml", &err);
    if (rc != TS_OK && memcmp(&p, &before, sizeof p) != 0)
        abort();
    if (rc != TS_OK && strncmp(err.text, "fuzz.yaml", 9) != 0)
        abort();   /* every refusal names the input */
    ts_model_params_free(&p);
    return 0;
}
