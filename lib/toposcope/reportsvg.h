/* toposcope — the report's picture (`toposcope report --svg`): the fabric tree as SVG with every
 * finding of the report on it.
 *
 * Drawn on the admin's tree (topology.conf) or the inferred one: every suspect link that names a
 * link of the tree, coloured from yellow to red by its evidence relative to the worst and as wide
 * as its median excess relative to the largest; a suspect named by a node set that no switch
 * holds exactly, as a dashed ring around the smallest switch holding it; nodes that did not
 * answer, crossed out; nodes measured under another leaf switch than the tree says, ringed, with
 * a dashed line to the switch they were measured with; and a legend. Beyond max_nodes nodes the
 * subtrees without any finding are drawn as one box each ("leaf07-3: 4 nodes") and the healthy
 * nodes of a switch that is drawn as one box per switch, so the findings stay readable on a
 * fabric of thousands of nodes. Time and memory linear in the tree and the findings. */
#ifndef TOPOSCOPE_REPORTSVG_H
#define TOPOSCOPE_REPORTSVG_H

#include <stdio.h>
#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/report.h"

#define TS_PICTURE_MAX_NODES_DEFAULT 64

typedef struct ts_report_picture {
    const ts_fabric *tree;           /* finalized */
    const ts_suspect *s;             /* the ranking (ts_report_suspects) */
    int n;
    const ts_mismatch *mm;           /* ts_report_mismatches against this tree, or NULL */
    int nmm;
    int max_nodes;                   /* 0: TS_PICTURE_MAX_NODES_DEFAULT */
} ts_report_picture;

/* What the picture shows, for the caller to say. */
typedef struct ts_picture_drawn {
    int links;                       /* suspect links drawn on the tree */
    int within;                      /* suspects ringed inside a switch */
    int unreachable;                 /* nodes crossed out */
    int mismatches;                  /* nodes ringed as measured elsewhere */
    int not_drawn;                   /* suspects that name nothing of the tree (node sets on the
                                      * inferred tree, nodes the tree lacks) */
    int collapsed;                   /* subtrees and runs of healthy nodes drawn as one box */
} ts_picture_drawn;

int ts_report_write_svg(const ts_report_picture *p, FILE *out, ts_picture_drawn *drawn,
                        ts_error *err);

#endif
