/* The cost of a rank's hints lookup as the MPI helper makes it (ts_hints_lookup): the first
 * lookup of RANK in FILE, then REPEAT more in the same process (what a program calling
 * toposcope_comm_split for every level does). Prints "first_ms R repeat_us R reads N".
 *   hints_lookup FILE RANK NODE [REPEAT] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "toposcope/hints_read.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: hints_lookup FILE RANK NODE [REPEAT]\n");
        return 2;
    }
    int repeat = argc > 4 ? atoi(argv[4]) : 1000;
    ts_hints_select sel = { atoi(argv[2]), argv[3] };
    ts_hints h;
    ts_error err;
    double t0 = now_ms();
    if (ts_hints_lookup(&h, argv[1], &sel, &err) != TS_OK) {
        fprintf(stderr, "%s\n", err.text);
        return 1;
    }
    double t1 = now_ms();
    ts_hints_free(&h);
    for (int i = 0; i < repeat; i++) {
        if (ts_hints_lookup(&h, argv[1], &sel, &err) != TS_OK) {
            fprintf(stderr, "%s\n", err.text);
            return 1;
        }
        ts_hints_free(&h);
    }
    double t2 = now_ms();
    printf("first_ms %.1f repeat_us %.2f reads %lu\n", t1 - t0, repeat ? (t2 - t1) * 1e3 / repeat : 0.0,
           ts_hints_lookup_reads());
    return 0;
}
