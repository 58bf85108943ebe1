/* libFuzzer target: the flag index (lib/records/flagindex.c), which the epilogs read from a
 * records directory anyone with access may drop files into. A refusal names the input and leaves
 * an empty index; an accepted index writes back to one that reads the same (same size, same
 * text again), and counting and pruning it stay within its bounds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/flagindex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *text_of(ts_flag_index *x, size_t *len)
{
    char *buf = NULL;
    FILE *out = open_memstream(&buf, len);
    if (!out || ts_flag_index_write(x, out) != TS_OK)
        abort();
    fclose(out);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_flag_index *x = ts_flag_index_new(), *y = ts_flag_index_new();
    ts_error err;
    if (!x || !y)
        abort();
    if (ts_flag_index_parse(x, (const char *)data, size, "flags.1", &err) != TS_OK) {
        if (ts_flag_index_size(x) != 0 || strncmp(err.text, "flags.1", 7) != 0)
            abort();
        ts_flag_index_free(x);
        ts_flag_index_free(y);
        return 0;
    }
    size_t len, len2;
    char *text = text_of(x, &len);
    if (ts_flag_index_parse(y, text, len, "rewritten", &err) != TS_OK || ts_flag_index_size(y) != ts_flag_index_size(x))
        abort();
    char *text2 = text_of(y, &len2);
    if (len != len2 || memcmp(text, text2, len))
        abort();
    /* every node named in the text counts at most its bound */
    ts_flag_count k;
    for (char *line = strstr(text, "\nflag "); line; line = strstr(line + 1, "\nflag ")) {
        char node[TS_FLAGS_TOKEN_MAX];
        if (sscanf(line + 6, "%255s", node) != 1)
            abort();
        ts_flag_index_count(x, node, 0, INT64_MAX, &k);
        if (k.jobs < 1 || k.jobs > ts_flag_index_size(x) || k.slow + k.loss + k.unreachable != k.jobs)
            abort();
    }
    ts_flag_index_prune(x, 1700000000);
    if (ts_flag_index_size(x) > ts_flag_index_size(y))
        abort();
    free(text);
    free(text2);
    ts_flag_index_free(x);
    ts_flag_index_free(y);
    return 0;
}
