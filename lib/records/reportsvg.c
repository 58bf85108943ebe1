/* toposcope — the report's picture (see toposcope/reportsvg.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/reportsvg.h"

#define SLOT 20.0                    /* px between two items on the bottom row */
#define LEVEL 80.0                   /* px between two depths */
#define TOP 150.0                    /* the tree starts below the legend */
#define MIN_WIDTH 700.0

enum { M_UNREACHABLE = 1, M_MISMATCH = 2 };

/* Everything the drawing knows per vertex; built once, each finding looked up by name once. */
typedef struct picture {
    const ts_report_picture *p;
    const ts_fabric *f;
    int *order, no;                  /* preorder */
    int *link_s, *within_s;          /* the suspect flagging the vertex's uplink, ringing it; -1 */
    unsigned char *mark, *hot, *shown, *open;
    int *measured_with;              /* mismatch nodes: the switch they were measured with */
    int *below;                      /* nodes in the subtree */
    int *group;                      /* switches: healthy nodes drawn as one box (collapse) */
    double *x, *gx;                  /* vertex and group-box positions */
    double max_ev, max_ex;
    int collapse, slots, labels;
} picture;

static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        default:
            if ((unsigned char)*s >= 0x20)
                fputc(*s, out);
        }
    }
}

static void picture_free(picture *g)
{
    free(g->order);
    free(g->link_s);
    free(g->within_s);
    free(g->mark);
    free(g->hot);
    free(g->shown);
    free(g->open);
    free(g->measured_with);
    free(g->below);
    free(g->group);
    free(g->x);
    free(g->gx);
}

static int picture_alloc(picture *g)
{
    size_t n = (size_t)(g->f->nvert ? g->f->nvert : 1);
    g->order = malloc(n * sizeof(int));
    g->link_s = malloc(n * sizeof(int));
    g->within_s = malloc(n * sizeof(int));
    g->measured_with = malloc(n * sizeof(int));
    g->below = calloc(n, sizeof(int));
    g->group = calloc(n, sizeof(int));
    g->mark = calloc(n, 1);
    g->hot = calloc(n, 1);
    g->shown = calloc(n, 1);
    g->open = calloc(n, 1);
    g->x = calloc(n, sizeof(double));
    g->gx = calloc(n, sizeof(double));
    if (!g->order || !g->link_s || !g->within_s || !g->measured_with || !g->below || !g->group || !g->mark ||
        !g->hot || !g->shown || !g->open || !g->x || !g->gx)
        return -1;
    for (size_t i = 0; i < n; i++)
        g->link_s[i] = g->within_s[i] = g->measured_with[i] = TS_NONE;
    return 0;
}

/* Preorder without a stack: down to the first child, else on to the next sibling of the
 * nearest vertex that has one. */
static void preorder(picture *g)
{
    const ts_fabric *f = g->f;
    int v = f->root;
    g->no = 0;
    while (v != TS_NONE) {
        g->order[g->no++] = v;
        if (f->v[v].first_child != TS_NONE) {
            v = f->v[v].first_child;
            continue;
        }
        while (v != TS_NONE && f->v[v].next_sibling == TS_NONE)
            v = f->v[v].parent;
        if (v != TS_NONE)
            v = f->v[v].next_sibling;
    }
}

/* Each finding onto its vertex, by one hash lookup of its name. */
static void place_findings(picture *g, ts_picture_drawn *d)
{
    const ts_report_picture *p = g->p;
    const ts_fabric *f = g->f;
    for (int i = 0; i < p->n; i++) {
        const ts_suspect *s = &p->s[i];
        int within = s->mapped && s->match == TS_MATCH_WITHIN;
        int v = ts_fabric_find(f, within ? s->within : s->id);
        if (v == TS_NONE || v == f->root || (s->mapped && s->match == TS_MATCH_NONE)) {
            d->not_drawn++;
            continue;
        }
        int *slot = within ? &g->within_s[v] : &g->link_s[v];
        if (*slot == TS_NONE)
            *slot = i;                          /* ranked: the first is the worst */
        if (!within && s->access && s->unreachable > 0 && f->v[v].kind == TS_NODE)
            g->mark[v] |= M_UNREACHABLE;
        g->hot[v] = 1;
        g->max_ev = s->evidence > g->max_ev ? s->evidence : g->max_ev;
        if (isfinite(s->median_excess_us) && s->median_excess_us > g->max_ex)
            g->max_ex = s->median_excess_us;
    }
    for (int i = 0; i < p->nmm && p->mm; i++) {
        int v = ts_fabric_find(f, p->mm[i].node), w = ts_fabric_find(f, p->mm[i].measured_with);
        if (v == TS_NONE || f->v[v].kind != TS_NODE)
            continue;
        g->mark[v] |= M_MISMATCH;
        g->measured_with[v] = w;
        g->hot[v] = 1;
        if (w != TS_NONE)
            g->hot[w] = 1;
    }
}

/* What is drawn: with collapse, a switch opens only when something below it is hot, and a
 * switch's healthy nodes become one box. Then the bottom row's slots, left to right. */
static void layout(picture *g, ts_picture_drawn *d)
{
    const ts_fabric *f = g->f;
    for (int i = g->no - 1; i > 0; i--) {       /* children before parents */
        int v = g->order[i], up = f->v[v].parent;
        g->below[up] += f->v[v].kind == TS_NODE ? 1 : g->below[v];
        g->hot[up] |= g->hot[v];
    }
    for (int i = 0; i < g->no; i++) {
        int v = g->order[i], up = f->v[v].parent;
        if (up != TS_NONE && !g->open[up])
            continue;
        if (up != TS_NONE && g->collapse && f->v[v].kind == TS_NODE && !g->hot[v]) {
            if (g->group[up]++ == 0) {
                g->gx[up] = 20 + SLOT * g->slots++;
                d->collapsed++;
            }
            continue;
        }
        g->shown[v] = 1;
        g->open[v] = f->v[v].kind == TS_SWITCH && (!g->collapse || g->hot[v] || v == f->root);
        if (!g->open[v] || f->v[v].first_child == TS_NONE) {
            g->x[v] = 20 + SLOT * g->slots++;
            d->collapsed += f->v[v].kind == TS_SWITCH && f->v[v].first_child != TS_NONE;
        }
        g->labels += f->v[v].kind == TS_NODE;
    }
    for (int i = g->no - 1; i >= 0; i--) {
        int v = g->order[i], k = g->group[v] ? 1 : 0;
        double sum = g->group[v] ? g->gx[v] : 0;
        if (!g->shown[v] || !g->open[v])
            continue;
        for (int c = f->v[v].first_child; c != TS_NONE; c = f->v[c].next_sibling)
            if (g->shown[c]) {
                sum += g->x[c];
                k++;
            }
        if (k)
            g->x[v] = sum / k;
    }
}

static double y_of(const ts_fabric *f, int v)
{
    return TOP + LEVEL * f->v[v].depth;
}

static void colour_of(const picture *g, const ts_suspect *s, char *out, size_t max)
{
    double sev = g->max_ev > 0 ? s->evidence / g->max_ev : 1;
    snprintf(out, max, "#ff%02x00", (int)(200 * (1 - sev)));
}

static void suspect_title(FILE *out, const ts_suspect *s, int rank)
{
    xml_text(out, s->id);
    fprintf(out, ": rank %d, flagged in %d of %d jobs, evidence %.2f", rank, s->flagged, s->seen, s->evidence);
    if (isfinite(s->median_excess_us))
        fprintf(out, ", median excess %+.2f us", s->median_excess_us);
    if (s->unreachable)
        fprintf(out, ", did not answer in %d", s->unreachable);
}

static void draw_links(FILE *out, const picture *g, ts_picture_drawn *d)
{
    const ts_fabric *f = g->f;
    for (int i = 0; i < g->no; i++) {
        int v = g->order[i], up = f->v[v].parent;
        if (g->shown[v] && g->group[v])          /* to the box of its healthy nodes */
            fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbbbbb\" "
                         "stroke-width=\"1\"/>\n", g->gx[v], y_of(f, v) + LEVEL, g->x[v], y_of(f, v));
        if (up == TS_NONE || !g->shown[v])
            continue;
        int k = g->link_s[v];
        if (k == TS_NONE) {
            fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbbbbb\" stroke-width=\"1\">"
                         "<title>", g->x[v], y_of(f, v), g->x[up], y_of(f, up));
            xml_text(out, f->v[v].name);
            fputs("</title></line>\n", out);
            continue;
        }
        const ts_suspect *s = &g->p->s[k];
        char colour[16];
        colour_of(g, s, colour, sizeof colour);
        int latency = isfinite(s->median_excess_us) && s->median_excess_us > 0 && g->max_ex > 0;
        double w = latency ? 2 + 6 * s->median_excess_us / g->max_ex : 3;
        fprintf(out, "<line class=\"flagged\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                     "stroke-width=\"%.1f\"%s><title>", g->x[v], y_of(f, v), g->x[up], y_of(f, up), colour, w,
                latency ? "" : " stroke-dasharray=\"4 2\"");
        suspect_title(out, s, k + 1);
        fputs("</title></line>\n", out);
        d->links++;
    }
    for (int i = 0; i < g->no; i++) {             /* measured elsewhere: to where */
        int v = g->order[i], w = g->measured_with[v];
        if (!g->shown[v] || !(g->mark[v] & M_MISMATCH) || w == TS_NONE || !g->shown[w])
            continue;
        fprintf(out, "<line class=\"measured-with\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                     "stroke=\"#e07000\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"><title>",
                g->x[v], y_of(f, v), g->x[w], y_of(f, w));
        xml_text(out, f->v[v].name);
        fputs(" measured with the nodes of ", out);
        xml_text(out, f->v[w].name);
        fputs("</title></line>\n", out);
    }
}

static void draw_switch(FILE *out, const picture *g, int v, ts_picture_drawn *d)
{
    const ts_fabric *f = g->f;
    double x = g->x[v], y = y_of(f, v);
    if (!g->open[v] && f->v[v].first_child != TS_NONE) {
        fprintf(out, "<rect class=\"collapsed\" x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"#dddddd\" "
                     "stroke=\"#999999\"><title>", x - 7, y - 5);
        xml_text(out, f->v[v].name);
        fprintf(out, ": %d node%s, nothing flagged</title></rect>\n", g->below[v], g->below[v] == 1 ? "" : "s");
    } else {
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#555555\"><title>", x, y);
        xml_text(out, f->v[v].name);
        fputs("</title></circle>\n", out);
    }
    if (g->open[v] || f->v[v].first_child == TS_NONE)
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x, y - 9);
    else                                        /* boxes stand close: their names slant below */
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" transform=\"rotate(-60 %.1f %.1f)\">",
                x + 3, y + 14, x + 3, y + 14);
    xml_text(out, f->v[v].name);
    fputs("</text>\n", out);
    int k = g->within_s[v];
    if (k != TS_NONE) {
        char colour[16];
        colour_of(g, &g->p->s[k], colour, sizeof colour);
        fprintf(out, "<circle class=\"within\" cx=\"%.1f\" cy=\"%.1f\" r=\"10\" fill=\"none\" stroke=\"%s\" "
                     "stroke-width=\"3\" stroke-dasharray=\"4 3\"><title>", x, y, colour);
        suspect_title(out, &g->p->s[k], k + 1);
        fputs(" (within ", out);
        xml_text(out, f->v[v].name);
        fputs(")</title></circle>\n", out);
        d->within++;
    }
    if (g->group[v]) {
        fprintf(out, "<rect class=\"collapsed\" x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"#dddddd\" "
                     "stroke=\"#999999\"><title>%d healthy node%s of ", g->gx[v] - 7, y + LEVEL - 5, g->group[v],
                g->group[v] == 1 ? "" : "s");
        xml_text(out, f->v[v].name);
        fprintf(out, "</title></rect>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", g->gx[v],
                y + LEVEL + 16, g->group[v]);
    }
}

static void draw_node(FILE *out, const picture *g, int v, ts_picture_drawn *d)
{
    const ts_fabric *f = g->f;
    double x = g->x[v], y = y_of(f, v);
    fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>", x, y,
            g->mark[v] & M_UNREACHABLE ? "#000000" : "#4a7ab5");
    xml_text(out, f->v[v].name);
    fputs("</title></circle>\n", out);
    if (g->mark[v] & M_UNREACHABLE) {
        fprintf(out, "<path class=\"unreachable\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\" stroke=\"#d00000\" "
                     "stroke-width=\"2.5\"><title>", x - 6, y - 6, x + 6, y + 6, x - 6, y + 6, x + 6, y - 6);
        xml_text(out, f->v[v].name);
        fputs(" did not answer</title></path>\n", out);
        d->unreachable++;
    }
    if (g->mark[v] & M_MISMATCH) {
        int w = g->measured_with[v];
        fprintf(out, "<rect class=\"mismatch\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"none\" "
                     "stroke=\"#e07000\" stroke-width=\"2\" transform=\"rotate(45 %.1f %.1f)\"><title>",
                x - 6, y - 6, x, y);
        xml_text(out, f->v[v].name);
        fputs(": the tree puts it under ", out);
        xml_text(out, f->v[f->v[v].parent].name);
        fputs(", measured with the nodes of ", out);
        xml_text(out, w != TS_NONE ? f->v[w].name : "?");
        fputs("</title></rect>\n", out);
        d->mismatches++;
    }
    if (g->labels <= TS_PICTURE_MAX_NODES_DEFAULT || g->hot[v]) {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" transform=\"rotate(-60 %.1f %.1f)\">", x + 3,
                y + 14, x + 3, y + 14);
        xml_text(out, f->v[v].name);
        fputs("</text>\n", out);
    }
}

static void draw_legend(FILE *out, const picture *g, const ts_picture_drawn *d)
{
    fprintf(out, "<g class=\"legend\">\n<text x=\"10\" y=\"16\" font-size=\"12\" font-weight=\"bold\">toposcope "
                 "report: %d suspect link%s, %d node%s measured elsewhere than the tree says</text>\n",
            g->p->n, g->p->n == 1 ? "" : "s", g->p->nmm, g->p->nmm == 1 ? "" : "s");
    fputs("<defs><linearGradient id=\"evidence\"><stop offset=\"0\" stop-color=\"#ffc800\"/>"
          "<stop offset=\"1\" stop-color=\"#ff0000\"/></linearGradient></defs>\n"
          "<rect x=\"10\" y=\"28\" width=\"40\" height=\"6\" fill=\"url(#evidence)\"/>\n", out);
    fprintf(out, "<text x=\"58\" y=\"35\">suspect link: colour by evidence (red: the worst), width by median "
                 "excess (widest: %+.2f us; dashed: no latency excess, lost or silent)</text>\n", g->max_ex);
    fputs("<circle cx=\"30\" cy=\"50\" r=\"7\" fill=\"none\" stroke=\"#ff6400\" stroke-width=\"3\" "
          "stroke-dasharray=\"4 3\"/>\n<text x=\"58\" y=\"54\">suspect inside this switch: its node set is no "
          "switch's subtree (hover for the set)</text>\n", out);
    fputs("<path d=\"M24 64L36 76M24 76L36 64\" stroke=\"#d00000\" stroke-width=\"2.5\"/>\n"
          "<text x=\"58\" y=\"73\">node that did not answer</text>\n", out);
    fputs("<rect x=\"25\" y=\"83\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"#e07000\" stroke-width=\"2\" "
          "transform=\"rotate(45 30 88)\"/><line x1=\"38\" y1=\"88\" x2=\"52\" y2=\"88\" stroke=\"#e07000\" "
          "stroke-dasharray=\"5 3\"/>\n<text x=\"58\" y=\"92\">node measured under another leaf switch than the "
          "tree says (dashed: the switch it was measured with)</text>\n", out);
    fputs("<rect x=\"23\" y=\"102\" width=\"14\" height=\"10\" fill=\"#dddddd\" stroke=\"#999999\"/>\n", out);
    fprintf(out, "<text x=\"58\" y=\"111\">healthy switch or nodes drawn as one box (%d box%s)%s</text>\n",
            d->collapsed, d->collapsed == 1 ? "" : "es",
            d->not_drawn ? "; some suspects name no link of this tree: see the table" : "");
    fputs("</g>\n", out);
}

int ts_report_write_svg(const ts_report_picture *p, FILE *out, ts_picture_drawn *drawn, ts_error *err)
{
    picture g = { .p = p, .f = p->tree };
    ts_picture_drawn d = { 0 };
    if (drawn)
        *drawn = d;
    if (p->tree->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the tree to draw is empty");
    if (picture_alloc(&g)) {
        picture_free(&g);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    g.collapse = p->tree->nnodes > (p->max_nodes > 0 ? p->max_nodes : TS_PICTURE_MAX_NODES_DEFAULT);
    preorder(&g);
    place_findings(&g, &d);
    layout(&g, &d);
    double width = 40 + SLOT * g.slots, height = TOP + LEVEL * (ts_fabric_max_depth(p->tree) + 1) + 30;
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                 "font-family=\"sans-serif\" font-size=\"9\">\n<title>toposcope report: suspect links</title>\n"
                 "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
            width > MIN_WIDTH ? width : MIN_WIDTH, height);
    draw_links(out, &g, &d);
    for (int i = 0; i < g.no; i++) {
        int v = g.order[i];
        if (g.shown[v] && p->tree->v[v].kind == TS_SWITCH)
            draw_switch(out, &g, v, &d);
        else if (g.shown[v])
            draw_node(out, &g, v, &d);
    }
    draw_legend(out, &g, &d);
    fputs("</svg>\n", out);
    picture_free(&g);
    if (drawn)
        *drawn = d;
    return ferror(out) ? ts_fail(err, TS_ESYS, "write error") : TS_OK;
}
