/* libFuzzer target: the record reader (toposcope report's input, written by epilogs and read
 * from a directory anyone with access may drop files into) must refuse or accept any input
 * without crashing, leaking or reading out of bounds; a refusal names the input and leaves
 * nothing behind; an accepted record writes back to one that reads the same, and feeds the
 * report's aggregation. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/record.h"
#include "toposcope/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_record r, s;
    ts_error err;
    int rc = ts_record_parse(&r, (const char *)data, size, "fuzz.yaml", &err);
    if (rc != TS_OK) {
        if (r.links.n != 0 || r.nodes != NULL || r.leaf_groups != NULL || strncmp(err.text, "fuzz.yaml", 9) != 0)
            abort();
        return 0;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        abort();
    ts_record_write(&r, out);
    fclose(out);
    if (ts_record_parse(&s, buf, len, "rewritten", &err) != TS_OK || s.links.n != r.links.n ||
        s.anomalies.n != r.anomalies.n || s.ngroups != r.ngroups)
        abort();
    ts_record_free(&s);
    free(buf);
    ts_report *rep = ts_report_new();
    const ts_suspect *sus;
    int n;
    ts_fabric tree;
    if (!rep || ts_report_add(rep, &r, &err) != TS_OK || ts_report_suspects(rep, &sus, &n, &err) != TS_OK)
        abort();
    if (ts_report_inferred_tree(rep, &tree, &err) == TS_OK)
        ts_fabric_free(&tree);
    ts_report_free(rep);
    ts_record_free(&r);
    return 0;
}
