/* libFuzzer target: the baseline reader must refuse or accept any input without crashing,
 * leaking or reading out of bounds; a refusal names the input and leaves nothing behind, an
 * accepted baseline finds each of its links by id and writes back to a file that reads the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/anomaly.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_baseline b, c;
    ts_error err;
    int rc = ts_baseline_parse(&b, (const char *)data, size, "fuzz.yaml", &err);
    if (rc != TS_OK) {
        if (b.n != 0 || b.l != NULL || strncmp(err.text, "fuzz.yaml", 9) != 0)
            abort();
        return 0;
    }
    for (int i = 0; i < b.n; i++)
        if (ts_baseline_find(&b, b.l[i].id) != &b.l[i] || b.l[i].count < 1)
            abort();
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        abort();
    ts_baseline_write(&b, out);
    fclose(out);
    if (ts_baseline_parse(&c, buf, len, "rewritten", &err) != TS_OK || c.n != b.n)
        abort();
    ts_baseline_free(&c);
    free(buf);
    ts_baseline_free(&b);
    return 0;
}
