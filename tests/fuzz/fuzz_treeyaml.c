/* libFuzzer target: the tree.yaml reader must refuse or accept any input without crashing,
 * leaking or reading out of bounds; a refusal names the input and leaves no tree behind, and an
 * accepted tree is a finalized fabric with at least one node. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/treeyaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_fabric f;
    ts_error err;
    int rc = ts_fabric_parse_tree_yaml(&f, (const char *)data, size, "fuzz.yaml", &err);
    if (rc != TS_OK) {
        if (f.nvert != 0 || f.v != NULL || strncmp(err.text, "fuzz.yaml", 9) != 0)
            abort();
        return 0;
    }
    if (f.root == TS_NONE || f.nnodes < 1 || f.v[f.root].kind != TS_SWITCH)
        abort();
    for (int i = 0; i < f.nnodes; i++)
        if (f.v[f.node_vertex[i]].kind != TS_NODE)
            abort();
    ts_fabric_free(&f);
    return 0;
}
