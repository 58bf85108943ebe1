/* Test helpers: paths of tests/data files wherever the test runs from, and small fabrics. */
#ifndef TOPOSCOPE_TEST_HWDATA_H
#define TOPOSCOPE_TEST_HWDATA_H

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "toposcope/fabric.h"
#include "toposcope/topoconf.h"

/* tests/data/SUB/FILE from the repo root, or relative to this source file. */
static inline const char *test_data(const char *sub, const char *file)
{
    static char path[2][1200];
    static int which;
    struct stat st;
    char *out = path[which ^= 1];
    snprintf(out, sizeof path[0], "tests/data/%s/%s", sub, file);
    if (stat("tests/data", &st) == 0)
        return out;
    const char *slash = strrchr(__FILE__, '/');
    int dirlen = slash ? (int)(slash - __FILE__) : 1;
    snprintf(out, sizeof path[0], "%.*s/../data/%s/%s", dirlen, slash ? __FILE__ : ".", sub, file);
    return out;
}

/* A path relative to the repo root (policies/, ...), wherever the test runs from. */
static inline const char *test_repo(const char *rel)
{
    static char path[1200];
    struct stat st;
    if (stat("tests/data", &st) == 0)
        return rel;
    const char *slash = strrchr(__FILE__, '/');
    int dirlen = slash ? (int)(slash - __FILE__) : 1;
    snprintf(path, sizeof path, "%.*s/../../%s", dirlen, slash ? __FILE__ : ".", rel);
    return path;
}

/* A fabric from topology.conf text; aborts the test program on a broken literal. */
static inline void test_fabric(ts_fabric *f, const char *conf)
{
    ts_error err;
    if (ts_fabric_parse_topology_conf(f, conf, strlen(conf), "test.conf", &err) != TS_OK) {
        printf("Bail out! test fabric: %s\n", err.text);
        exit(1);
    }
}

#endif
