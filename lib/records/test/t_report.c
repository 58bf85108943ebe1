/* The report's aggregation across records: a job counts once per link however often its record
 * names it, a flagged estimate never feeds the baseline, and the suspects' strings outlive the
 * records they came from. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "hwdata.h"
#include "toposcope/record.h"
#include "toposcope/report.h"
#include "toposcope/topoconf.h"

static void add(ts_report *rep, const char *text)
{
    ts_record r;
    ts_error err = {{0}};
    if (ts_record_parse(&r, text, strlen(text), "t.yaml", &err) != TS_OK) {
        printf("Bail out! fixture does not parse: %s\n", err.text);
        exit(1);
    }
    if (ts_report_add(rep, &r, &err) != TS_OK) {
        printf("Bail out! %s\n", err.text);
        exit(1);
    }
    ts_record_free(&r);      /* the report must not point into it */
}

static const ts_suspect *find(const ts_suspect *s, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].id, id))
            return &s[i];
    return NULL;
}

static void test_counts(void)
{
    ts_report *rep = ts_report_new();
    /* job 1 names n2 twice among its anomalies (a record written by hand, or a future writer) */
    add(rep, "toposcope_record: 1\njob: \"1\"\ntime: 100\nlinks:\n"
             "  - {link: n1, kind: access, est_us: 2.0, lo_us: 1.9, hi_us: 2.1}\n"
             "  - {link: n2, kind: access, est_us: 9.0, lo_us: 8.9, hi_us: 9.1}\n"
             "  - {link: n3, kind: access, est_us: 2.0, lo_us: 1.9, hi_us: 2.1}\n"
             "  - {link: n4, kind: access, est_us: 2.0, lo_us: 1.9, hi_us: 2.1}\n"
             "anomalies:\n"
             "  - {link: n2, kind: access, reason: slow, excess_pct: 350, excess_us: 7, score: 40}\n"
             "  - {link: n2, kind: access, reason: slow, excess_pct: 350, excess_us: 7, score: 40}\n");
    add(rep, "toposcope_record: 1\njob: \"2\"\ntime: 50\nlinks:\n"
             "  - {link: n1, kind: access, est_us: 2.2, lo_us: 2.1, hi_us: 2.3}\n"
             "  - {link: n2, kind: access, est_us: 8.0, lo_us: 7.9, hi_us: 8.1}\n"
             "anomalies:\n"
             "  - {link: n2, kind: access, reason: slow, excess_pct: 300, excess_us: 6, score: 30}\n"
             "  - {link: n5, kind: access, reason: unreachable, score: 1000}\n");
    /* job 3's tree had an unresolved switch: its n6 may span hidden switches */
    static const char job3[] = "toposcope_record: 1\njob: \"3\"\ntime: 70\nlinks:\n"
                               "  - {link: n1, kind: access, est_us: 2.1, lo_us: 2.0, hi_us: 2.2, se_us: 0.03}\n"
                               "  - {link: n6, kind: access, est_us: 5.0, lo_us: 4.9, hi_us: 5.1, uncertain: true}\n"
                               "anomalies: []\n";
    add(rep, job3);
    const ts_suspect *s;
    int n;
    ts_error err = {{0}};
    int rc = ts_report_suspects(rep, &s, &n, &err);
    ok(rc == TS_OK && n == 2, "two links flagged (%d)", n);
    const ts_suspect *n2 = find(s, n, "n2"), *n5 = find(s, n, "n5");
    ok(n2 && n2->flagged == 2 && n2->seen == 2, "n2: flagged by 2 jobs of the 2 that saw it, job 1 once (%d/%d)",
       n2 ? n2->flagged : -1, n2 ? n2->seen : -1);
    ok(n2 && n2->njobs == 2 && !strcmp(n2->jobs[0], "1") && !strcmp(n2->jobs[1], "2"), "n2 lists jobs 1 and 2");
    ok(n2 && n2->first_seen == 50 && n2->last_seen == 100, "n2 first and last flagged at 50 and 100");
    ok(n2 && fabs(n2->median_excess_pct - 325) < 1e-9, "n2's median excess over its two jobs is 325%%");
    ok(n2 && n2->max_score == 40, "n2's worst score 40");
    /* weights: job 1 flagged 2 of 4 entries, job 2 flagged 2 of 2 */
    ok(n2 && fabs(n2->evidence - 0.5) < 1e-9, "n2's evidence 0.5 (%g)", n2 ? n2->evidence : NAN);
    ok(n5 && n5->unreachable == 1 && n5->flagged == 1 && isnan(n5->median_excess_pct), "n5 silent once, no excess");
    ok(s[0].evidence >= s[n - 1].evidence, "most evidence first");
    ok(ts_report_records(rep) == 3, "three records");

    ts_baseline b;
    ok(ts_report_baseline(rep, &b, &err) == TS_OK, "baseline");
    const ts_baseline_link *l1 = ts_baseline_find(&b, "n1");
    ok(l1 && l1->count == 3 && fabs(l1->median_us - 2.1) < 1e-9, "n1 learned from all 3 jobs, median 2.1");
    ok(!ts_baseline_find(&b, "n2"), "n2 was flagged wherever it was measured: not in the baseline");
    ok(ts_baseline_find(&b, "n3") && ts_baseline_find(&b, "n4"), "n3 and n4 learned");
    ok(!ts_baseline_find(&b, "n6"), "n6, uncertain in the one job that measured it, not learned");
    ts_baseline_free(&b);

    ts_record r;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    ok(ts_record_parse(&r, job3, strlen(job3), "job3.yaml", &err) == TS_OK && r.links.n == 2 &&
       !r.links.o[0].uncertain && r.links.o[1].uncertain, "a record's uncertain link reads back as such");
    ts_record_write(&r, out);
    fclose(out);
    ok(text && strstr(text, "{link: \"n6\", kind: access, est_us: 5.0000, lo_us: 4.9000, hi_us: 5.1000, se_us: 0.0608, "
                            "samples: 0, uncertain: true}") && strstr(text, "hi_us: 2.2000, se_us: 0.0300, samples: 0}\n"),
       "and is written so, n1 not; se_us as read, n6's (absent) off its interval");
    free(text);
    ts_record_free(&r);

    const char *late = "toposcope_record: 1\njob: \"4\"\ntime: 1\nlinks: []\nanomalies: []\n";
    ts_record_parse(&r, late, strlen(late), "late.yaml", &err);
    ok(ts_report_add(rep, &r, &err) != TS_OK && strstr(err.text, "after the suspects were ranked"),
       "a record after the ranking is refused: %s", err.text);
    ts_record_free(&r);
    ts_report_free(rep);
}

/* Many distinct links in one record: each one entry, found in one probe. */
static void test_many_links(void)
{
    enum { N = 20000 };
    size_t cap = (size_t)N * 160 + 256, o = 0;
    char *text = malloc(cap);
    o += (size_t)snprintf(text + o, cap - o, "toposcope_record: 1\njob: \"7\"\ntime: 1\nlinks:\n");
    for (int i = 0; i < N; i++)
        o += (size_t)snprintf(text + o, cap - o, "  - {link: \"{l%d}\", kind: uplink, est_us: 1.0}\n", i);
    o += (size_t)snprintf(text + o, cap - o, "anomalies:\n");
    for (int i = 0; i < N; i += 2)
        o += (size_t)snprintf(text + o, cap - o, "  - {link: \"{l%d}\", kind: uplink, reason: slow, score: 9}\n", i);
    ts_report *rep = ts_report_new();
    add(rep, text);
    const ts_suspect *s;
    int n;
    ts_error err = {{0}};
    ts_report_suspects(rep, &s, &n, &err);
    ok(n == N / 2, "every second link of %d flagged: %d suspects", N, n);
    int seen_once = 1;
    for (int i = 0; i < n; i++)
        seen_once &= s[i].seen == 1 && s[i].flagged == 1;
    ok(seen_once, "each seen and flagged once");
    ts_baseline b;
    ts_report_baseline(rep, &b, &err);
    ok(b.n == N / 2 && ts_baseline_find(&b, "{l1}") && !ts_baseline_find(&b, "{l0}"),
       "the unflagged half is the baseline (%d)", b.n);
    ts_baseline_free(&b);
    ts_report_free(rep);
    free(text);
}

/* With topology.conf: a job's node set and another job's switch name are one suspect, under the
 * switch's name; a set no switch holds exactly stays a set, within the smallest switch holding
 * it; a record's unmeasured node does not spoil the exact match. */
static void test_admin_names(void)
{
    ts_fabric admin;
    ts_error err;
    test_fabric(&admin, "SwitchName=spine Switches=podA,podB\nSwitchName=podA Switches=leafA,leafB\n"
                        "SwitchName=podB Switches=leafC\nSwitchName=leafA Nodes=n[1-4]\n"
                        "SwitchName=leafB Nodes=n[5-8]\nSwitchName=leafC Nodes=n[9-12]\n");
    ts_report *rep = ts_report_new();
    ok(ts_report_set_admin(rep, &admin, &err) == TS_OK, "the admin tree is set");
    /* job 1 measured n1-n3 (n4 did not answer) and n5-n8, without the topology */
    add(rep, "toposcope_record: 1\njob: \"1\"\ntime: 100\nnodes: \"n[1-8]\"\n"
             "tree: {switches: 3, depth: 2, leaf_groups: [\"n[1-3]\", \"n[5-8]\"]}\nlinks:\n"
             "  - {link: \"{n[1-3]}\", kind: uplink, est_us: 9.0, lo_us: 8.9, hi_us: 9.1}\n"
             "anomalies:\n  - {link: \"{n[1-3]}\", kind: uplink, reason: slow, expected_us: 2, observed_us: 9, "
             "excess_pct: 350, excess_us: 7, score: 40}\n"
             "  - {link: \"n4\", kind: access, reason: unreachable, score: 1000}\n");
    /* job 2 had the topology: the same link by its switch's name; and a set across two leaves */
    add(rep, "toposcope_record: 1\njob: \"2\"\ntime: 200\nnodes: \"n[1-9]\"\n"
             "tree: {switches: 3, depth: 2, leaf_groups: [\"n[1-4],n5\", \"n[6-8]\", \"n9\"]}\nlinks: []\n"
             "anomalies:\n  - {link: \"leafA\", kind: uplink, reason: slow, expected_us: 2, observed_us: 9, "
             "excess_pct: 350, excess_us: 7, score: 40}\n"
             "  - {link: \"{n[1-5]}\", kind: uplink, reason: slow, expected_us: 2, observed_us: 4, "
             "excess_pct: 100, excess_us: 2, score: 20}\n");
    const ts_suspect *s;
    int n = 0, rc = ts_report_suspects(rep, &s, &n, &err);
    ok(rc == TS_OK && n == 3, "three suspects (%d)", n);
    const ts_suspect *a = find(s, n, "leafA"), *w = find(s, n, "{n[1-5]}"), *u = find(s, n, "n4");
    ok(a && a->flagged == 2 && a->mapped && a->match == TS_MATCH_EXACT && !a->within,
       "the set and the name are one suspect, leafA, flagged by both jobs");
    ok(w && w->match == TS_MATCH_WITHIN && w->within && !strcmp(w->within, "podA"),
       "a set across two leaves is within podA (%s)", w && w->within ? w->within : "-");
    ok(u && u->match == TS_MATCH_EXACT && u->unreachable == 1, "the silent node is its access link");
    ts_baseline b;
    ok(ts_report_baseline(rep, &b, &err) == TS_OK && ts_baseline_find(&b, "{n[1-3]}") == NULL && b.n == 0,
       "the baseline keeps the records' ids (the flagged one is left out)");
    ts_baseline_free(&b);
    ts_report_free(rep);
    rep = ts_report_new();
    add(rep, "toposcope_record: 1\njob: \"3\"\ntime: 100\nlinks: []\nanomalies: []\n");
    ok(ts_report_set_admin(rep, &admin, &err) == TS_EINPUT, "the admin tree comes before the records");
    ts_report_free(rep);
    ts_fabric_free(&admin);
}

static const char *const fabric_records[] = {
    /* fabric b: two jobs, whose leaf groups overlap in b3 */
    "toposcope_record: 1\njob: \"11\"\ntime: 100\nnodes: \"b[1-6]\"\n"
    "tree: {switches: 3, depth: 2, leaf_groups: [\"b[1-3]\", \"b[5-6]\"]}\nlinks: []\nanomalies: []\n",
    "toposcope_record: 1\njob: \"12\"\ntime: 110\nnodes: \"b[3-4],b10\"\n"
    "tree: {switches: 3, depth: 2, leaf_groups: [\"b[3-4]\", \"b10\"]}\nlinks: []\nanomalies: []\n",
    /* fabric a: never in a job with b's nodes */
    "toposcope_record: 1\njob: \"13\"\ntime: 120\nnodes: \"a[1-4]\"\n"
    "tree: {switches: 3, depth: 2, leaf_groups: [\"a[3-4]\", \"a[1-2]\"]}\nlinks: []\nanomalies: []\n",
};

static char *inferred_conf(int reverse)
{
    ts_report *rep = ts_report_new();
    int n = (int)(sizeof fabric_records / sizeof *fabric_records);
    for (int i = 0; i < n; i++)
        add(rep, fabric_records[reverse ? n - 1 - i : i]);
    ts_fabric f;
    ts_error err;
    char *buf = NULL;
    size_t len = 0;
    if (ts_report_inferred_tree(rep, &f, &err) == TS_OK) {
        FILE *out = open_memstream(&buf, &len);
        ts_fabric_write_topology_conf(&f, out);
        fclose(out);
        ts_fabric_free(&f);
    } else {
        diag("  %s", err.text);
    }
    ts_report_free(rep);
    return buf;
}

/* Jobs on disjoint node sets are separate fabrics; names and order follow the nodes' names,
 * not the order the records came in. */
static void test_inferred_fabrics(void)
{
    const char *want = "# topology.conf written by toposcope: leaf switches first\n"
                       "SwitchName=leaf1 Nodes=a[1-2]\nSwitchName=leaf2 Nodes=a[3-4]\n"
                       "SwitchName=leaf3 Nodes=b[1-4]\nSwitchName=leaf4 Nodes=b[5-6]\nSwitchName=leaf5 Nodes=b10\n"
                       "SwitchName=top1 Switches=leaf[1-2]\nSwitchName=top2 Switches=leaf[3-5]\n";
    char *a = inferred_conf(0), *b = inferred_conf(1);
    if (!ok(a && !strcmp(a, want), "two fabrics, each its own top switch; leaves joined where groups overlap"))
        diag("  got:\n%s", a ? a : "(failed)");
    ok(a && b && !strcmp(a, b), "the records in the other order give the same bytes");
    free(a);
    free(b);
    ts_report *rep = ts_report_new();
    add(rep, fabric_records[2]);
    ts_fabric f;
    ts_error err;
    ok(ts_report_inferred_tree(rep, &f, &err) == TS_OK && !strcmp(f.v[f.root].name, "top") && !f.v[f.root].implicit,
       "one fabric: one top switch, 'top', as before");
    ts_fabric_free(&f);
    ts_report_free(rep);
    rep = ts_report_new();
    add(rep, "toposcope_record: 1\njob: \"14\"\ntime: 100\nnodes: \"leaf1,top\"\n"
             "tree: {switches: 2, depth: 1, leaf_groups: [\"leaf1,top\"]}\nlinks: []\nanomalies: []\n");
    ok(ts_report_inferred_tree(rep, &f, &err) == TS_OK && ts_fabric_find(&f, "top-sw") != TS_NONE &&
       ts_fabric_find(&f, "leaf1-sw") != TS_NONE && f.nnodes == 2, "nodes named like switches: the switches step aside");
    ts_fabric_free(&f);
    ts_report_free(rep);
}

int main(void)
{
    test_counts();
    test_inferred_fabrics();
    test_admin_names();
    test_many_links();
    return done_testing();
}
