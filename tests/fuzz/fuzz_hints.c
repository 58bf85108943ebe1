/* libFuzzer target: the hints.yaml reader (every MPI rank of an mpirun job reads the file) must
 * refuse or accept any input without crashing, leaking or reading out of bounds. A refusal names
 * the input and leaves nothing allocated; an accepted file is consistent (group ids inside their
 * level, one leader per group, members' strings inside the text), and a selection of a rank or
 * node it holds reads back exactly that member, and a copy (what ts_hints_lookup hands out) is
 * equal to it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/hints_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_member(const ts_hints *h, int m)
{
    const ts_hints_member *x = &h->member[m];
    if (x->node >= h->text_len || x->slot >= h->text_len || x->cpus >= h->text_len)
        abort();
    for (int l = 0; l < h->nlevels; l++) {
        int g = h->group[(size_t)m * h->nlevels + l];
        if (g < 0 || g >= h->level[l].groups || h->leader[(size_t)m * h->nlevels + l] > 1)
            abort();
    }
    ts_hints_env e;
    ts_hints_member_env(h, m, &e);
    if (e.nlevels != h->nlevels || strcmp(e.node, h->text + x->node))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_hints h;
    ts_error err;
    /* the reader takes (text, len), so the input is deliberately not NUL-terminated */
    int rc = ts_hints_parse(&h, (const char *)data, size, "fuzz.yaml", NULL, &err);
    if (rc != TS_OK) {
        if (h.member || h.group || h.leader || h.text || h.nmembers)
            abort();
        if (strncmp(err.text, "fuzz.yaml", 9) != 0)
            abort();
        return 0;
    }
    if (h.version < 1 || h.version > TS_HINTS_VERSION || h.nlevels < 1 || h.nlevels > TS_LEVELS_MAX)
        abort();
    int *leaders = NULL;
    for (int l = 0; l < h.nlevels; l++) {
        if (!memchr(h.level[l].name, '\0', sizeof h.level[l].name))
            abort();
        leaders = realloc(leaders, sizeof *leaders * (size_t)h.level[l].groups);
        memset(leaders, 0, sizeof *leaders * (size_t)h.level[l].groups);
        for (int m = 0; m < h.nmembers; m++)
            leaders[h.group[(size_t)m * h.nlevels + l]] += h.leader[(size_t)m * h.nlevels + l];
        for (int g = 0; h.nmembers && g < h.level[l].groups; g++)
            if (leaders[g] != 1)
                abort();
    }
    free(leaders);
    for (int m = 0; m < h.nmembers; m++)
        check_member(&h, m);
    {
        /* what ts_hints_lookup hands out is a copy: the same members, groups and strings */
        ts_hints c;
        size_t cells = (size_t)h.nmembers * (size_t)h.nlevels;
        if (ts_hints_copy(&c, &h, &err) != TS_OK)
            abort();
        if (c.nmembers != h.nmembers || c.text_len != h.text_len ||
            (cells && (memcmp(c.group, h.group, sizeof(int) * cells) || memcmp(c.leader, h.leader, cells))) ||
            (h.text_len && memcmp(c.text, h.text, h.text_len)) ||
            (h.nmembers && memcmp(c.member, h.member, sizeof *c.member * (size_t)h.nmembers)))
            abort();
        for (int m = 0; m < c.nmembers; m++)
            check_member(&c, m);
        ts_hints_free(&c);
    }
    if (h.nmembers > 0) {
        /* the last member again, selected: the same groups */
        int last = h.nmembers - 1;
        ts_hints one;
        ts_hints_select sel = { h.member[last].index, h.text + h.member[last].node };
        if (ts_hints_parse(&one, (const char *)data, size, "fuzz.yaml", &sel, &err) != TS_OK)
            abort();
        int m = one.nmembers - 1;  /* nodes may repeat a name: the first one is selected */
        if (m < 0 || (!h.members_are_nodes &&
                      memcmp(one.group, h.group + (size_t)last * h.nlevels, sizeof(int) * (size_t)h.nlevels)))
            abort();
        ts_hints_free(&one);
    }
    ts_hints_free(&h);
    return 0;
}
