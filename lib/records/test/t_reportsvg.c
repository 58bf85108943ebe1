/* The report's picture: every finding drawn on the tree it names (links, a set within a switch,
 * a silent node, a node measured elsewhere), the ones naming nothing counted, healthy subtrees
 * collapsed on a large fabric, and time linear in the suspects (it was quadratic). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tap.h"
#include "hwdata.h"
#include "toposcope/reportsvg.h"

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* The SVG of p (malloc'd), or a bail out. */
static char *draw(const ts_report_picture *p, ts_picture_drawn *d)
{
    char *text = NULL;
    size_t len = 0;
    ts_error err;
    FILE *f = open_memstream(&text, &len);
    if (!f || ts_report_write_svg(p, f, d, &err) != TS_OK || fclose(f) != 0) {
        printf("Bail out! ts_report_write_svg failed\n");
        exit(1);
    }
    return text;
}

static ts_suspect suspect(const char *id, int access, double evidence, double excess_us)
{
    return (ts_suspect){ .id = id, .access = access, .seen = 4, .flagged = 3, .evidence = evidence,
                         .median_excess_pct = NAN, .median_excess_us = excess_us, .mapped = 1,
                         .match = TS_MATCH_EXACT };
}

static void test_findings(void)
{
    ts_fabric f;
    test_fabric(&f, "SwitchName=spine Switches=podA,podB\nSwitchName=podA Switches=leafA,leafB\n"
                    "SwitchName=podB Switches=leafC\nSwitchName=leafA Nodes=n[1-4]\n"
                    "SwitchName=leafB Nodes=n[5-8]\nSwitchName=leafC Nodes=n[9-12]\n");
    ts_suspect s[5] = { suspect("leafA", 0, 3.0, 8.0), suspect("n3", 1, 2.0, NAN),
                        suspect("{n[1-2],n5}", 0, 1.0, 2.0), suspect("{x[1-2]}", 0, 0.5, 1.0),
                        suspect("n9", 1, 0.2, 4.0) };
    s[1].unreachable = 3;
    s[2].match = TS_MATCH_WITHIN;
    s[2].within = "podA";
    s[3].match = TS_MATCH_NONE;
    ts_mismatch mm = { .node = "n5", .admin_switch = "leafB", .measured_with = "leafA", .jobs = 2 };
    ts_report_picture p = { .tree = &f, .s = s, .n = 5, .mm = &mm, .nmm = 1 };
    ts_picture_drawn d;
    char *svg = draw(&p, &d);
    ok(d.links == 3 && count(svg, "class=\"flagged\"") == 3, "three flagged links drawn (%d)", d.links);
    ok(strstr(svg, "stroke=\"#ff0000\" stroke-width=\"8.0\"><title>leafA: rank 1,") != NULL,
       "the worst is red, the largest excess the widest");
    ok(strstr(svg, "stroke-width=\"5.0\"><title>n9: rank 5,") != NULL, "width grows with the excess (4 of 8 us)");
    ok(strstr(svg, "stroke-dasharray=\"4 2\"><title>n3: rank 2,") != NULL, "a link without latency excess is dashed");
    ok(d.unreachable == 1 && strstr(svg, "class=\"unreachable\"") && strstr(svg, "n3 did not answer"),
       "the silent node is crossed out");
    ok(d.within == 1 && strstr(svg, "class=\"within\"") && strstr(svg, "(within podA)"),
       "the set no switch holds exactly is ringed around podA");
    ok(d.mismatches == 1 && strstr(svg, "n5: the tree puts it under leafB, measured with the nodes of leafA") &&
       strstr(svg, "class=\"measured-with\""), "the node measured elsewhere is ringed, with a line to leafA");
    ok(d.not_drawn == 1, "the suspect that names nothing of the tree is counted, not drawn");
    ok(d.collapsed == 0 && count(svg, "<circle cx") == 12 + 6 + 1, "12 nodes, 6 switches (and the legend's ring): nothing collapsed");
    ok(strstr(svg, "class=\"legend\"") && strstr(svg, "did not answer") && strstr(svg, "measured under another"),
       "a legend");
    free(svg);
    ts_fabric_free(&f);
}

/* LEAVES leaf switches of PER nodes each under one top switch, in topology.conf syntax. */
static char *wide_conf(int leaves, int per)
{
    size_t max = (size_t)leaves * (64 + (size_t)per * 2) + 64, at = 0;
    char *c = malloc(max);
    at += (size_t)snprintf(c + at, max - at, "SwitchName=top Switches=l[1-%d]\n", leaves);
    for (int i = 1; i <= leaves; i++)
        at += (size_t)snprintf(c + at, max - at, "SwitchName=l%d Nodes=l%dn[1-%d]\n", i, i, per);
    return c;
}

static void test_large(void)
{
    ts_fabric f;
    char *conf = wide_conf(64, 32);
    test_fabric(&f, conf);
    free(conf);
    ts_suspect s[2] = { suspect("l7", 0, 2.0, 3.0), suspect("l9n4", 1, 1.0, 1.0) };
    ts_report_picture p = { .tree = &f, .s = s, .n = 2 };
    ts_picture_drawn d;
    char *svg = draw(&p, &d);
    ok(d.links == 2, "2048 nodes: both suspects drawn");
    ok(d.collapsed == 62 + 2, "62 healthy leaves and the healthy nodes of two leaves are boxes (%d)", d.collapsed);
    ok(strstr(svg, "l3: 32 nodes, nothing flagged") && strstr(svg, "31 healthy nodes of l9") &&
       strstr(svg, "32 healthy nodes of l7"), "a box says what it holds");
    ok(strlen(svg) < 60000, "and the picture stays small (%zu bytes)", strlen(svg));
    free(svg);
    p.max_nodes = 4096;
    svg = draw(&p, &d);
    ok(d.collapsed == 0 && count(svg, "<circle cx") == 2048 + 65 + 1, "a larger max_nodes draws every vertex");
    free(svg);
    ts_fabric_free(&f);
}

/* Every node's access link a suspect: one lookup each (the old picture scanned every suspect
 * for every vertex: 4 * 10^8 string compares here, seconds). */
static void test_linear(void)
{
    ts_fabric f;
    char *conf = wide_conf(200, 100);
    test_fabric(&f, conf);
    free(conf);
    int n = 20000;
    ts_suspect *s = malloc(sizeof *s * (size_t)n);
    char (*names)[16] = malloc(16 * (size_t)n);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], 16, "l%dn%d", i / 100 + 1, i % 100 + 1);
        s[i] = suspect(names[i], 1, 1.0 + i, 1.0);
    }
    ts_report_picture p = { .tree = &f, .s = s, .n = n };
    ts_picture_drawn d;
    clock_t t0 = clock();
    char *svg = draw(&p, &d);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    const char *pre = getenv("LD_PRELOAD");
    int valgrind = pre && strstr(pre, "valgrind");
    ok(d.links == n, "20000 suspects drawn (%d)", d.links);
    ok(valgrind || cpu < 1.0, "in %.3f s of CPU (bound 1 s; not checked under valgrind)", cpu);
    free(svg);
    free(s);
    free(names);
    ts_fabric_free(&f);
}

int main(void)
{
    test_findings();
    test_large();
    test_linear();
    return done_testing();
}
