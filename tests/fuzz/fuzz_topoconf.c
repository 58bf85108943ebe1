/* libFuzzer target: topology.conf parser, and the writer's round trip on whatever parses. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/fabric.h"
#include "toposcope/topoconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The written file must parse to the same switches and nodes, each under the same parent. */
static void check_round_trip(const ts_fabric *f)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return;
    int rc = ts_fabric_write_topology_conf(f, out);
    fclose(out);
    if (rc != TS_OK && rc != TS_ELIMIT)     /* ELIMIT: a line would be too long to read back */
        abort();
    if (rc != TS_OK) {
        free(text);
        return;
    }
    ts_fabric g;
    ts_error err;
    if (ts_fabric_parse_topology_conf(&g, text, len, "written", &err) != TS_OK) {
        fprintf(stderr, "written file does not parse: %s\n%s", err.text, text);
        abort();
    }
    if (g.nvert != f->nvert || g.nnodes != f->nnodes)
        abort();
    for (int i = 0; i < f->nvert; i++) {
        int j = ts_fabric_find(&g, f->v[i].name);
        if (j == TS_NONE || g.v[j].kind != f->v[i].kind)
            abort();
        int pf = f->v[i].parent, pg = g.v[j].parent;
        if ((pf == TS_NONE) != (pg == TS_NONE))
            abort();
        if (pf != TS_NONE && strcmp(f->v[pf].name, g.v[pg].name) != 0)
            abort();
    }
    ts_fabric_free(&g);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_fabric f;
    ts_error err;
    int rc = ts_fabric_parse_topology_conf(&f, (const char *)data, size, "fuzz.conf", &err);
    if (rc == TS_OK) {
        /* queries must work on anything the parser accepted */
        int a = ts_fabric_node_vertex(&f, 0), b = ts_fabric_node_vertex(&f, f.nnodes - 1);
        if (ts_fabric_hops(&f, a, b) < 0)
            abort();
        check_round_trip(&f);
    } else if (rc == TS_EINPUT && strncmp(err.text, "fuzz.conf:", 10) != 0) {
        fprintf(stderr, "message without location: %s\n", err.text);
        abort();
    }
    ts_fabric_free(&f);
    return 0;
}
