/* toposcope — reading back a tree written by ts_fabric_write_yaml (tree.yaml of `toposcope sim`).
 *
 *   nodes: 8
 *   switches: 3
 *   vertices:
 *     - {name: "s1", kind: switch, parent: null, link_us: 0.0000}
 *     - {name: "node1", kind: node, parent: "s1", link_us: 1.2500, host_us: 2.0000}
 *
 * The reader takes untrusted input: bounded in bytes, values and vertices, no recursion, and every
 * refusal names FILE:LINE:COLUMN. Vertices may come in any order; exactly one (a switch) has no
 * parent. Children keep the order in which the file lists them. */
#ifndef TOPOSCOPE_TREEYAML_H
#define TOPOSCOPE_TREEYAML_H

#include <stddef.h>
#include "toposcope/error.h"
#include "toposcope/fabric.h"

#define TS_TREE_YAML_MAX_BYTES (64u << 20)
#define TS_TREE_YAML_MAX_VERTICES (1 << 18)

/* f is initialised here; on error it is left empty. */
int ts_fabric_parse_tree_yaml(ts_fabric *f, const char *text, size_t len, const char *source,
                              ts_error *err);
int ts_fabric_load_tree_yaml(ts_fabric *f, const char *path, ts_error *err);
/* A tree file of either kind: Slurm topology.conf when the name ends in ".conf", else tree.yaml. */
int ts_fabric_load_tree(ts_fabric *f, const char *path, ts_error *err);

#endif
