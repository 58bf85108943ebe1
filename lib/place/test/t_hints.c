/* hints.yaml read back: what the emitter writes comes back member for member (ranks and
 * measure-only nodes), a selection keeps one member and stops reading there, the environment of
 * a member is the one hints.env has, the host check, and every broken file refused with
 * FILE:LINE:COLUMN and what is wrong. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "placeset.h"
#include "toposcope/emit.h"
#include "toposcope/hints_read.h"

static const char *two_leaves =
    "SwitchName=top Switches=leafa,leafb\nSwitchName=leafa Nodes=n[1-2]\nSwitchName=leafb Nodes=n[3-4]\n";

static char *hints_text(const setup *s, const ts_policy *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ts_emit_hints_yaml(&s->h, s->pl.nranks ? &s->pl : NULL, &s->g, p, f);
    fclose(f);
    return buf;
}

/* Member m of h has exactly the groups and leaders of member `want` of g. */
static int same_member(const ts_hints *h, int m, const ts_groups *g, int want)
{
    return !memcmp(h->group + (size_t)m * h->nlevels, g->group + (size_t)want * g->nlevels,
                   sizeof(int) * (size_t)g->nlevels) &&
           !memcmp(h->leader + (size_t)m * h->nlevels, g->leader + (size_t)want * g->nlevels,
                   (size_t)g->nlevels);
}

static void test_round_trip(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_SPREAD, 0, 2, 1, 0);
    run(&s, two_leaves, "2pack-2numa-8core-ht.xml", &p, 20);
    ts_model_params mp;
    ts_error merr = {{0}};
    memset(&mp, 0, sizeof mp);
    ts_model_params_profile(&mp, "ethernet", &merr);
    ts_groups_logp(&s.g, &s.h, &mp, &merr);
    ts_model_params_free(&mp);
    char *text = hints_text(&s, &p);
    ts_hints h;
    ts_error err = {{0}};
    ok(ts_hints_parse(&h, text, strlen(text), "hints.yaml", NULL, &err) == TS_OK, "what the emitter writes reads back %s", err.text);
    ok(h.version == 2 && h.nranks == 20 && h.nnodes == 4 && h.cpus_per_rank == 2 && !strcmp(h.kind, "spread"),
       "version, nranks, nnodes, cpus_per_rank, kind");
    is_int(h.nlevels, s.g.nlevels, "every level");
    int same = h.nlevels == s.g.nlevels;
    for (int l = 0; same && l < h.nlevels; l++)
        same = !strcmp(h.level[l].name, s.g.level[l].name) && h.level[l].groups == s.g.level[l].ngroups;
    ok(same, "with its name and group count");
    ok(!h.members_are_nodes && h.nmembers == 20, "20 ranks");
    same = 1;
    char slot[64];
    for (int r = 0; r < h.nmembers && same; r++) {
        ts_emit_slot(&s.pl, r, slot, sizeof slot);
        same = h.member[r].index == r && same_member(&h, r, &s.g, r) &&
               !strcmp(ts_hints_node(&h, r), host(&s, r)) && !strcmp(h.text + h.member[r].slot, slot);
    }
    ok(same, "each rank with its node, slot, groups and leadership");
    ok(!strcmp(h.text + h.member[1].cpus, "0-1,2-3"), "rank 1's CPUs: two cores of two PUs (%s)", h.text + h.member[1].cpus);
    is_num(h.level[0].L_us, s.g.level[0].logp.L_us, 1e-4, "the job level's LogP L");
    is_num(h.level[1].g_us, s.g.level[1].logp.g_us, 1e-4, "the leaf level's g");
    ok(h.level[1].pairs == s.g.level[1].logp.pairs && !strcmp(h.level[1].source, "model"), "pairs and source");
    ok(isnan(h.level[2].L_us) && !strcmp(h.level[2].source, "none"), "null (the node level) reads as unknown");
    same = 1;
    for (int l = 0; l < h.nlevels; l++)
        same = same && !strcmp(h.level[l].reason, s.g.level[l].logp.reason ? s.g.level[l].logp.reason : "");
    ok(same && h.level[2].reason[0] && !h.level[0].reason[0], "every level's reason reads back (%s: %s)",
       h.level[2].name, h.level[2].reason);
    char list[256];
    ts_hints_level_list(&h, list, sizeof list);
    ok(!strcmp(list, "job,leaf,node,package,numa,l3,core"), "level list %s", list);
    ok(ts_hints_level_index(&h, "numa") == 4 && ts_hints_level_index(&h, "rack") == -1, "level lookup");
    ts_hints_free(&h);

    ts_hints_select sel = { 13, NULL };
    ok(ts_hints_parse(&h, text, strlen(text), "hints.yaml", &sel, &err) == TS_OK, "a selection reads %s", err.text);
    ok(h.nmembers == 1 && h.member[0].index == 13 && same_member(&h, 0, &s.g, 13) &&
           !strcmp(ts_hints_node(&h, 0), host(&s, 13)), "and keeps only rank 13");
    ts_hints_free(&h);
    /* Everything after rank 13's line broken: the selection never reads it, a full read does. */
    char *cut = strstr(text, "  - {rank: 14,");
    strcpy(cut, "  - {rank: 14, node: [broken\n");
    ok(ts_hints_parse(&h, text, strlen(text), "hints.yaml", &sel, &err) == TS_OK && h.nmembers == 1,
       "a selection stops reading at its member %s", err.text);
    ts_hints_free(&h);
    ok(ts_hints_parse(&h, text, strlen(text), "hints.yaml", NULL, &err) != TS_OK && strstr(err.text, "hints.yaml:"),
       "a full read does not: %s", err.text);
    sel.rank = 99;
    *cut = '\0';
    ok(ts_hints_parse(&h, text, strlen(text), "hints.yaml", &sel, &err) == TS_EINPUT &&
           strstr(err.text, "rank 99 is not in the file (14 ranks)"), "a rank the file lacks: %s", err.text);
    sel.rank = -1;
    sel.node = "n1";
    ok(ts_hints_parse(&h, text, strlen(text), "x.yaml", &sel, &err) == TS_EINPUT &&
           strstr(err.text, "the file lists ranks: a rank must be asked for"), "a node asked of a rank file: %s", err.text);
    free(text);
    done(&s);
}

static void test_nodes(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_MEASURE_ONLY, 0, 1, 1, 0);
    run(&s, two_leaves, "1pack-4core.xml", &p, 0);
    char *text = hints_text(&s, &p);
    ts_hints h;
    ts_error err = {{0}};
    ok(ts_hints_parse(&h, text, strlen(text), "m.yaml", NULL, &err) == TS_OK, "measure-only hints read back %s", err.text);
    ok(h.members_are_nodes && h.nmembers == 4 && h.nlevels == 3 && h.nranks == 0, "4 nodes, 3 levels");
    int same = 1;
    for (int m = 0; m < 4; m++)
        same = same && same_member(&h, m, &s.g, m);
    ok(same, "each node's groups and leadership");
    ts_hints_free(&h);
    ts_hints_select sel = { -1, "n3" };
    ok(ts_hints_parse(&h, text, strlen(text), "m.yaml", &sel, &err) == TS_OK && h.nmembers == 1 &&
           h.member[0].index == 2 && same_member(&h, 0, &s.g, 2), "node n3 selected by name: the third %s", err.text);
    ts_hints_free(&h);
    sel.node = "n9";
    ok(ts_hints_parse(&h, text, strlen(text), "m.yaml", &sel, &err) == TS_EINPUT &&
           strstr(err.text, "m.yaml: node 'n9' is not in the file (4 nodes)"), "%s", err.text);
    free(text);
    done(&s);
}

/* ---- the environment ---- */

static void collect(void *buf, const char *key, const char *value)
{
    char *b = buf;
    size_t n = strlen(b);
    snprintf(b + n, 4096 - n, "%s=%s\n", key, value);
}

static void test_env(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_COMPACT, 0, 1, 1, 0);
    run(&s, two_leaves, "1pack-4core.xml", &p, 10);
    char *text = hints_text(&s, &p);
    ts_hints h;
    ts_error err = {{0}};
    ts_hints_select sel = { 6, NULL };
    ok(ts_hints_parse(&h, text, strlen(text), "hints.yaml", &sel, &err) == TS_OK, "rank 6 %s", err.text);
    ts_hints_env e;
    ts_hints_member_env(&h, 0, &e);
    char mine[4096] = "";
    ts_hints_env_each(&e, collect, mine);
    ok(strstr(mine, "TOPOSCOPE_LEVELS=job,leaf,node,package,numa,l3,core\nTOPOSCOPE_RANK=6\nTOPOSCOPE_NODE=n2\n"
                    "TOPOSCOPE_CPUS=2\nTOPOSCOPE_GROUP_JOB=0\nTOPOSCOPE_LEADER_JOB=0\nTOPOSCOPE_GROUP_LEAF=0\n") != NULL,
       "rank 6's environment: levels, rank, node, CPUs, then per level group and leader");
    /* hints.env of the same rank holds the same lines: one format for every way a task gets it */
    char *env = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&env, &len);
    ts_emit_hints_env(&s.h, &s.pl, &s.g, &p, NULL, NULL, 6, f);
    fclose(f);
    ok(strstr(env, mine) != NULL, "hints.env of rank 6 has exactly these lines");
    free(env);
    ts_hints_free(&h);
    free(text);

    char key[64];
    ok(ts_hints_env_key(key, sizeof key, "GROUP", "switch2") == 0 && !strcmp(key, "TOPOSCOPE_GROUP_SWITCH2"), "%s", key);
    ok(ts_hints_env_key(key, 20, "LEADER", "package") == -1, "a key that does not fit is refused");

    char name[256], why[600];
    gethostname(name, sizeof name);
    name[strcspn(name, ".")] = '\0';
    unsetenv("SLURMD_NODENAME");
    ok(ts_hints_on_this_host(name, why, sizeof why), "this host's short name is this host");
    ok(!ts_hints_on_this_host("surely-not-this-host", why, sizeof why) && strstr(why, name), "another is not (%s)", why);
    setenv("SLURMD_NODENAME", "node7", 1);
    ok(ts_hints_on_this_host("node7", why, sizeof why), "so is Slurm's name of the node");
    ok(!ts_hints_on_this_host("node6", why, sizeof why) && !strcmp(why, "node7 (SLURMD_NODENAME)"), "%s", why);
    ok(!ts_hints_on_this_host(name, why, sizeof why), "where Slurm names the node, the host name does not count");
    unsetenv("SLURMD_NODENAME");
    done(&s);
}

static void test_load(void)
{
    ts_hints h;
    ts_error err = {{0}};
    is_int(ts_hints_load(&h, "/nonexistent/hints.yaml", NULL, &err), TS_EINPUT, "a missing file is bad input");
    ok(strstr(err.text, "/nonexistent/hints.yaml: No such file") != NULL, "%s", err.text);
    char path[] = "/tmp/t_hints.XXXXXX";
    int fd = mkstemp(path);
    const char *text = "version: 1\nlevels:\n  - {name: job, groups: 1}\n  - {name: node, groups: 2}\n"
                       "nodes:\n  - {node: a, group: [0, 0], leader: [1, 1]}\n  - {node: b, group: [0, 1], leader: [0, 1]}\n";
    ok(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "a file written");
    close(fd);
    ok(ts_hints_load(&h, path, NULL, &err) == TS_OK && h.nmembers == 2 && h.nranks == -1 && h.nlevels == 2,
       "a minimal file (version, levels, nodes) loads %s", err.text);
    ts_hints_free(&h);
    unlink(path);
}

/* The process keeps its last lookup: the same rank again reads nothing, another rank, a
 * changed file or a refusal behave as they must. */
static void write_file(const char *path, const char *text)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "w");
    ok(f && fputs(text, f) >= 0 && fclose(f) == 0 && rename(tmp, path) == 0, "%s written", path);
}

static void test_lookup(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_SPREAD, 0, 1, 1, 0);
    run(&s, two_leaves, "2pack-2numa-8core-ht.xml", &p, 40);
    char *spread = hints_text(&s, &p);
    ts_groups spread_g = s.g;
    memset(&s.g, 0, sizeof s.g);
    ts_policy pc = policy(TS_PLACE_COMPACT, 0, 1, 1, 0);
    ts_placement_free(&s.pl);
    ts_place_options o = { 40, 0 };
    ts_place(&s.h, &pc, &o, &s.pl, &s.err);
    ts_groups_compute(&s.g, &s.h, &s.pl, &s.err);
    char *compact = hints_text(&s, &pc);
    char path[] = "/tmp/t_hints_lookup.XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    write_file(path, spread);
    ts_hints h;
    ts_error err = {{0}};
    unsigned long reads = ts_hints_lookup_reads();
    ts_hints_select sel = { 39, NULL };
    ok(ts_hints_lookup(&h, path, &sel, &err) == TS_OK && h.nmembers == 1 && same_member(&h, 0, &spread_g, 39),
       "lookup of rank 39: its groups %s", err.text);
    ts_hints_free(&h);
    is_int((int)(ts_hints_lookup_reads() - reads), 1, "the first lookup reads the file");
    int same = 1;
    for (int i = 0; i < 5; i++) {
        same = same && ts_hints_lookup(&h, path, &sel, &err) == TS_OK && h.nmembers == 1 &&
               same_member(&h, 0, &spread_g, 39) && !strcmp(ts_hints_node(&h, 0), "n4") &&
               h.nranks == 40 && !strcmp(h.kind, "spread");
        ts_hints_free(&h);
    }
    ok(same, "five more lookups of rank 39: the same member, node and header");
    is_int((int)(ts_hints_lookup_reads() - reads), 1, "and none of them read the file again");
    sel.rank = 38;
    ok(ts_hints_lookup(&h, path, &sel, &err) == TS_OK && same_member(&h, 0, &spread_g, 38), "rank 38");
    ts_hints_free(&h);
    is_int((int)(ts_hints_lookup_reads() - reads), 2, "another rank is read");
    write_file(path, compact);
    ok(ts_hints_lookup(&h, path, &sel, &err) == TS_OK && same_member(&h, 0, &s.g, 38) &&
       !strcmp(h.kind, "compact"), "a file replaced under the same name: its new content");
    ts_hints_free(&h);
    is_int((int)(ts_hints_lookup_reads() - reads), 3, "read again");
    sel.rank = 40;
    int rc1 = ts_hints_lookup(&h, path, &sel, &err);
    char first[TS_ERROR_TEXT_MAX];
    snprintf(first, sizeof first, "%s", err.text);
    int rc2 = ts_hints_lookup(&h, path, &sel, &err);
    ok(rc1 == TS_EINPUT && rc2 == TS_EINPUT && strstr(first, "rank 40 is not in the file (40 ranks)") &&
       !strcmp(first, err.text) && h.member == NULL, "a refusal is kept, with its message: %s", err.text);
    is_int((int)(ts_hints_lookup_reads() - reads), 4, "and not read twice");
    unlink(path);
    ok(ts_hints_lookup(&h, path, &sel, &err) == TS_EINPUT && strstr(err.text, "No such file"),
       "a file gone: %s", err.text);
    is_int((int)(ts_hints_lookup_reads() - reads), 4, "nothing read");
    free(spread);
    free(compact);
    ts_groups_free(&spread_g);
    done(&s);
}

/* ---- broken files ---- */

typedef struct bad_case {
    const char *text;
    const char *where;       /* "b.yaml:L:C" or "b.yaml" */
    const char *what;
} bad_case;

#define HEAD "version: 1\nlevels:\n  - {name: job, depth: 0, groups: 1}\n  - {name: node, depth: 1, groups: 2}\n"
#define R0 "  - {rank: 0, node: a, group: [0, 0], leader: [1, 1]}\n"

static void test_broken(void)
{
    static const bad_case cases[] = {
        { "", "b.yaml:1:1", "empty: hints need 'version', 'levels' and 'ranks' or 'nodes'" },
        { "- a\n", "b.yaml:1:1", "the top level must be a mapping" },
        { "version: 1\nlevle: []\n", "b.yaml:2:1", "unknown key 'levle' in the top level (allowed: version, policy" },
        { "version: 1\nversion: 1\n", "b.yaml:2:1", "key 'version' given twice in the top level (first at line 1)" },
        { "version: 3\n", "b.yaml:1:10", "hints version 3: this reader knows versions 1 to 2" },
        { "version: one\n", "b.yaml:1:10", "'version' must be an integer from 1 to 1000000, got 'one'" },
        { "version: 1\nkind: packed\n", "b.yaml:2:7", "'kind' must be one of compact, spread, block, measure-only, got 'packed'" },
        { "version: 1\nranks: []\nlevels: []\n", "b.yaml:2:8", "'ranks' comes before 'levels'" },
        { "version: 1\nlevels: {job: 1}\n", "b.yaml:2:9", "'levels' must be a list" },
        { "version: 1\nlevels: []\n", "b.yaml:2:9", "'levels' is empty" },
        { "version: 1\nlevels:\n  - {name: Leaf, groups: 1}\n", "b.yaml:3:12", "level name 'Leaf' must be a lowercase letter" },
        { "version: 1\nlevels:\n  - {name: job, groups: 1}\n  - {name: job, groups: 1}\n", "b.yaml:4:12", "level 'job' is listed twice" },
        { "version: 1\nlevels:\n  - {name: job, depth: 1, groups: 1}\n", "b.yaml:3:24", "level 'job' has depth 1 but is level 0" },
        { "version: 1\nlevels:\n  - {name: job, groups: 0}\n", "b.yaml:3:25", "'groups' must be an integer from 1 to" },
        { "version: 1\nlevels:\n  - {name: job}\n", "b.yaml:3:5", "a level needs 'name' and 'groups'" },
        { "version: 1\nlevels:\n  - {name: job, groups: 1, grups: 2}\n", "b.yaml:3:28", "unknown key 'grups' in a level (allowed: name, depth, groups, logp)" },
        { "version: 1\nlevels:\n  - {name: job, groups: 1, logp: {L_us: fast}}\n", "b.yaml:3:41", "'L_us' must be a number from 0 to 1e+09, got 'fast'" },
        { "version: 1\nlevels:\n  - {name: job, groups: 1, logp: {source: guess}}\n", "b.yaml:3:43", "'source' must be one of tree, model, none, got 'guess'" },
        { "version: 1\nlevels:\n  - {name: job, groups: 1, logp: {reason: [a, b]}}\n", "b.yaml:3:43", "'reason' must be a non-empty name" },
        { HEAD "ranks:\n  - {rank: 1, node: a, group: [0, 0], leader: [1, 1]}\n", "b.yaml:6:12", "ranks must be listed in order from 0: expected rank 0, got 1" },
        { HEAD "ranks:\n  - {rank: 0, node: a, group: [0], leader: [1, 1]}\n", "b.yaml:6:31", "'group' has 1 values but there are 2 levels" },
        { HEAD "ranks:\n  - {rank: 0, node: a, group: 0, leader: [1, 1]}\n", "b.yaml:6:31", "'group' must be a list with one value per level, not a scalar" },
        { HEAD "ranks:\n  - {rank: 0, node: a, group: [0, 2], leader: [1, 1]}\n", "b.yaml:6:35", "'group at 'node'' must be an integer from 0 to 1, got '2'" },
        { HEAD "ranks:\n  - {rank: 0, node: a, group: [0, 0], leader: [1, 2]}\n", "b.yaml:6:51", "'leader' must be an integer from 0 to 1, got '2'" },
        { HEAD "ranks:\n  - {rank: 0, group: [0, 0], leader: [1, 1]}\n", "b.yaml:6:5", "a rank entry needs 'rank', 'node', 'group' and 'leader'" },
        { HEAD "ranks:\n  - {rank: 0, node: a, group: [0, 0], leader: [1, 1], core: 3}\n", "b.yaml:6:55", "unknown key 'core' in a rank entry (allowed: rank, node, slot, cpus, group, leader)" },
        { HEAD "ranks:\n  - {rank: 0, node: a, group: [0, 1], leader: [1, 1]}\n", "b.yaml:6:5", "rank 0: group 1 at 'node' comes before group 0 (ids are numbered in the order of their first member)" },
        { HEAD "ranks:\n  - {rank: 0, node: a, group: [0, 0], leader: [1, 0]}\n", "b.yaml:6:5", "rank 0 is the first member of group 0 at 'node' but not marked as its leader" },
        { HEAD "ranks:\n" R0 "  - {rank: 1, node: a, group: [0, 0], leader: [1, 0]}\n", "b.yaml:7:5", "rank 1 is marked as leader of group 0 at 'job', which an earlier member leads" },
        { "version: 1\nlevels:\n  - {name: job, groups: 2}\n  - {name: node, groups: 2}\nranks:\n"
          "  - {rank: 0, node: a, group: [0, 0], leader: [1, 1]}\n  - {rank: 1, node: b, group: [1, 0], leader: [1, 0]}\n",
          "b.yaml:7:5", "rank 1: group 0 at 'node' lies in group 0 at 'job', not in group 1" },
        { HEAD "nranks: 3\nranks:\n" R0 "  - {rank: 1, node: b, group: [0, 1], leader: [0, 1]}\n", "b.yaml", "'nranks' is 3 but 2 ranks are listed" },
        { HEAD "ranks:\n" R0, "b.yaml", "level 'node' has 2 groups but the ranks use 1" },
        { HEAD "nranks: 1\nranks:\n" R0 "  - {rank: 1, node: b, group: [0, 1], leader: [0, 1]}\n", "b.yaml:8:12", "rank 1, but 'nranks' is 1" },
        { HEAD "ranks: []\nnodes: []\n", "b.yaml:6:8", "both 'ranks' and 'nodes'" },
        { HEAD "nodes:\n  - {node: a, slot: '0:0', group: [0, 0], leader: [1, 1]}\n", "b.yaml:6:15", "unknown key 'slot' in a node entry (allowed: node, group, leader)" },
        { HEAD "ranks:\n  - {rank: 0, node: &n a, group: [0, 0], leader: [1, 1]}\n  - {rank: 1, node: *n, group: [0, 1], leader: [0, 1]}\n",
          "b.yaml:7:21", "YAML aliases (*name) are not supported" },
        { HEAD "ranks:\n  - {rank: 0, node: a, group: [0, 0], leader: [1, 1], slot: [[[[1]]]]}\n", "b.yaml:6:63", "nesting deeper than 3 levels" },
        { HEAD "ranks:\n  - {rank: 0, node: a, group: [0, 0]\n", "b.yaml:7:1", "YAML syntax error" },
        { HEAD "ranks: []\n---\nversion: 1\n", "b.yaml:6:1", "only one YAML document is allowed" },
        { "levels:\n  - {name: job, groups: 1}\nranks: []\n", "b.yaml:1:1", "hints need 'version', 'levels' and 'ranks' or 'nodes'" },
        { HEAD "ranks:\n  - 5\n", "b.yaml:6:5", "a rank entry must be a mapping {rank, node, slot, cpus, group, leader}, not a scalar" },
        { HEAD "ranks:\n  - {rank: 0, node: \"a\\tb\", group: [0, 0], leader: [1, 1]}\n", "b.yaml:6:21", "'node' must not contain control characters" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case *c = &cases[i];
        ts_hints h;
        ts_error err = {{0}};
        memset(&h, 0x5a, sizeof h);
        int rc = ts_hints_parse(&h, c->text, strlen(c->text), "b.yaml", NULL, &err);
        char where[64];
        snprintf(where, sizeof where, "%s:", c->where);
        int at = strchr(c->where, ':') ? !strncmp(err.text, where, strlen(where))
                                       : !strncmp(err.text, "b.yaml: ", 8);
        if (!ok(rc != TS_OK && at && strstr(err.text, c->what) && h.member == NULL && h.nmembers == 0,
                "refused at %s: %s", c->where, c->what))
            diag("  got rc %d: %s", rc, rc == TS_OK ? "(accepted)" : err.text);
        if (rc == TS_OK)
            ts_hints_free(&h);
    }
}

int main(void)
{
    test_round_trip();
    test_nodes();
    test_env();
    test_load();
    test_lookup();
    test_broken();
    return done_testing();
}
