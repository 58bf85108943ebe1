/* libFuzzer target: hostlist expansion, and compress -> expand giving back the same names. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/hostlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Round trips on huge lists only cost time; the structure is the same for small ones. */
#define ROUND_TRIP_MAX 100000

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_round_trip(ts_hostlist *hl)
{
    char *s = ts_hostlist_compress(hl->hosts, hl->count);
    if (!s)
        abort();
    ts_hostlist back;
    ts_error err;
    if (ts_hostlist_expand(s, strlen(s), &back, &err) != TS_OK) {
        fprintf(stderr, "compressed list does not expand: '%s': %s\n", s, err.text);
        abort();
    }
    if (back.count != hl->count)
        abort();
    qsort(hl->hosts, hl->count, sizeof *hl->hosts, cmp_str);
    qsort(back.hosts, back.count, sizeof *back.hosts, cmp_str);
    for (size_t i = 0; i < back.count; i++)
        if (strcmp(back.hosts[i], hl->hosts[i]) != 0)
            abort();
    ts_hostlist_free(&back);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_hostlist hl;
    ts_error err;
    int rc = ts_hostlist_expand((const char *)data, size, &hl, &err);
    if (rc == TS_OK) {
        if (hl.count == 0)
            abort();
        for (size_t i = 0; i < hl.count; i++)
            if (strlen(hl.hosts[i]) > TS_HOSTNAME_MAX || hl.hosts[i][0] == '\0')
                abort();
        if (hl.count <= ROUND_TRIP_MAX)
            check_round_trip(&hl);
    } else if (rc == TS_EINPUT && (hl.count != 0 || strncmp(err.text, "column ", 7) != 0)) {
        abort();
    }
    ts_hostlist_free(&hl);
    return 0;
}
