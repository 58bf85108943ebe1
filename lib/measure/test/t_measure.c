/* One whole measurement (lib/measure/measure.c) on the simulator, seeded, so the test cannot
 * fail by chance (without jitter the rounds' load alone once set two leaves under a switch of
 * their own in fast's tree, which the additive method's tree, without it, replaced: now a
 * disagreement, partial): discovery gives the true tree, the link
 * stage identifies every link, the files written are the files rendered; with a known tree
 * PMM's plan replaces discovery; a budget too small for the link stage leaves the tree and says
 * partial. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tap.h"
#include "toposcope/gen.h"
#include "toposcope/measure.h"
#include "toposcope/metrics.h"
#include "toposcope/model.h"
#include "toposcope/sim.h"

typedef struct bench {
    ts_fabric truth;
    ts_model model;
    ts_sim *sim;
    ts_probe_engine e;
    char **names;
} bench;

/* The 2-level, 4 x 4 fabric under the idealised Ethernet profile. */
static int bench_up(bench *b, double budget_us, ts_error *err)
{
    memset(b, 0, sizeof *b);
    const int fanout[] = {4, 4};
    ts_model_params p;
    int rc = ts_gen_regular(&b->truth, fanout, 2, 0, err);
    if (rc == TS_OK)
        rc = ts_model_params_profile(&p, "ethernet", err);
    if (rc != TS_OK)
        return rc;
    rc = ts_model_realize(&b->model, &b->truth, &p, 1, NULL, 0, err);
    ts_model_params_free(&p);
    if (rc == TS_OK)
        rc = ts_sim_create(&b->sim, &b->truth, &b->model, 2, err);
    if (rc == TS_OK)
        rc = ts_probe_engine_init(&b->e, ts_sim_transport(b->sim), NULL, budget_us, err);
    b->names = malloc(sizeof(char *) * (size_t)b->truth.nnodes);
    for (int i = 0; b->names && i < b->truth.nnodes; i++)
        b->names[i] = b->truth.v[b->truth.node_vertex[i]].name;
    return rc;
}

static void bench_down(bench *b)
{
    ts_probe_engine_free(&b->e);
    ts_sim_free(b->sim);
    ts_model_free(&b->model);
    ts_fabric_free(&b->truth);
    free(b->names);
}

static char *slurp(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY);
    if (fd < 0)
        return NULL;
    char *s = calloc(1, 1 << 20);
    ssize_t n = s ? read(fd, s, (1 << 20) - 1) : -1;
    close(fd);
    if (n < 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* One measurement on a fresh bench with budget_us; known: the tree is given (PMM's plan). The
 * caller takes the bench down, and frees m when this returned TS_OK. */
static int measure_on_bench(bench *b, double budget_us, int known, ts_measure *m, ts_error *err)
{
    ts_measure_options o;
    ts_measure_options_default(&o);
    int rc = bench_up(b, budget_us, err);
    o.names = b->names;
    o.known_tree = known ? &b->truth : NULL;
    return rc == TS_OK ? ts_measure_run(&b->e, &o, m, err) : rc;
}

static void test_discovered(void)
{
    bench b;
    ts_error err = {{0}};
    ts_measure m;
    int rc = measure_on_bench(&b, 10e6, 0, &m, &err);
    if (!ok(rc == TS_OK, "discovery and links on 16 simulated nodes: %s", err.text)) {
        bench_down(&b);
        return;
    }
    ts_accuracy acc;
    ok(ts_accuracy_compare(&b.truth, &m.tree, 1000, 1, &acc, &err) == TS_OK && acc.tree_exact &&
           acc.nodes_missing == 0, "the tree is the truth");
    ok(!b.e.partial && m.links_ran && m.links.undetermined == 0 && m.plan.rank == m.links.nlinks,
       "the link stage ran and determined all %d links (plan rank %d)", m.links.nlinks, m.plan.rank);
    ok(m.disc_end_us > m.disc_start_us && m.link_time_us > 0, "both stages took transport time");
    char why[512];
    ok(strcmp(ts_measure_verdict(&m, why, sizeof why), "measured") == 0 && why[0] == '\0',
       "the verdict: measured");
    /* a link the solve put well below zero: the split above it is not supported */
    ts_link_estimate saved = m.links.link[0];
    m.links.link[0].est_us = -10;
    m.links.link[0].se_us = 1;
    ok(strcmp(ts_measure_verdict(&m, why, sizeof why), "partial") == 0 &&
           strstr(why, "1 link below zero latency") && strstr(why, "not supported"),
       "a link 10 standard errors below zero: partial: %s", why);
    m.links.link[0].se_us = 4;
    ok(strcmp(ts_measure_verdict(&m, why, sizeof why), "measured") == 0,
       "2.5 standard errors below zero is within the noise: measured");
    m.links.link[0] = saved;

    char dir[] = "/tmp/t_measure.XXXXXX";
    int dfd = mkdtemp(dir) ? open(dir, O_RDONLY | O_DIRECTORY) : -1;
    ts_measure_text t;
    ok(dfd >= 0 && ts_measure_write(&m, dfd, 0640, NULL, NULL, &err) == TS_OK, "the files are "
       "written: %s", err.text);
    ok(ts_measure_render(&m, NULL, NULL, &t, &err) == TS_OK, "and rendered");
    static const char *const names[] = {"topology.conf", "tree.yaml", "links.yaml", "pairs.yaml"};
    const char *texts[] = {t.topology_conf, t.tree_yaml, t.links_yaml, t.pairs_yaml};
    for (int k = 0; k < 4; k++) {
        char *on_disk = slurp(dfd, names[k]);
        struct stat st;
        int found = fstatat(dfd, names[k], &st, 0) == 0;
        ok(on_disk && texts[k] && strcmp(on_disk, texts[k]) == 0 && found &&
               (st.st_mode & 0777) == 0640, "%s on disk is the rendered text, mode 0640", names[k]);
        free(on_disk);
        unlinkat(dfd, names[k], 0);
    }
    ts_measure_text_free(&t);
    if (dfd >= 0)
        close(dfd);
    rmdir(dir);
    ts_measure_free(&m);
    bench_down(&b);
}

static void test_known_tree(void)
{
    bench b;
    ts_error err = {{0}};
    ts_measure m;
    int rc = measure_on_bench(&b, 10e6, 1, &m, &err);
    ok(rc == TS_OK && m.links_ran && m.links.undetermined == 0 && m.plan.paths_examined > 0,
       "a known tree: PMM's plan (%ld paths examined) determines every link: %s",
       rc == TS_OK ? m.plan.paths_examined : 0L, err.text);
    if (rc == TS_OK)
        ts_measure_free(&m);
    bench_down(&b);
}

static void test_small_budget(void)
{
    /* enough for discovery on 16 nodes (tens of rounds of ~50 us) but not the link stage */
    bench b;
    ts_error err = {{0}};
    ts_measure m;
    int rc = measure_on_bench(&b, 10e6, 0, &m, &err);
    double discovery = rc == TS_OK ? m.disc_end_us - m.disc_start_us : 0;
    if (rc == TS_OK)
        ts_measure_free(&m);
    bench_down(&b);
    rc = measure_on_bench(&b, discovery * 1.05, 0, &m, &err);
    char why[512] = "";
    ok(rc == TS_OK && b.e.partial && m.tree.nnodes == 16 && (!m.links_ran || m.links.partial) &&
           strcmp(ts_measure_verdict(&m, why, sizeof why), "partial") == 0 && strstr(why, "budget"),
       "a budget just over discovery's time: the tree stands, the verdict is partial: %s %s",
       err.text, why);
    if (rc == TS_OK)
        ts_measure_free(&m);
    bench_down(&b);
}

int main(void)
{
    test_discovered();
    test_known_tree();
    test_small_budget();
    return done_testing();
}
