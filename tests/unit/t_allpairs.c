/* Bufe's all-pairs schedule: every pair exactly once, no node twice in a round, and
 * T(n) = ceil(n/2) + T(ceil(n/2)) rounds, which exceeds n for many n (322 needs 327). */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "toposcope/discover.h"

static int expected_rounds(int n)
{
    int t = 0;
    for (int m = n; m >= 2; m = (m + 1) / 2)
        t += (m + 1) / 2;
    return t;
}

static int check(int n)
{
    ts_pair *pairs = NULL;
    int *start = NULL, nrounds = 0;
    ts_error err = {{0}};
    if (ts_allpairs_schedule(n, &pairs, &start, &nrounds, &err) != TS_OK)
        return 0;
    int good = nrounds == expected_rounds(n) && start[0] == 0 &&
               start[nrounds] == n * (n - 1) / 2;
    unsigned char *seen = calloc((size_t)n * (size_t)n, 1);
    int *mark = calloc((size_t)n, sizeof(int));
    for (int r = 0; good && r < nrounds; r++)
        for (int k = start[r]; good && k < start[r + 1]; k++) {
            int a = pairs[k].a, b = pairs[k].b;
            if (a < 0 || b < 0 || a >= n || b >= n || a == b || mark[a] == r + 1 ||
                mark[b] == r + 1 || seen[(size_t)a * n + b])
                good = 0;
            else {
                mark[a] = mark[b] = r + 1;
                seen[(size_t)a * n + b] = seen[(size_t)b * n + a] = 1;
            }
        }
    free(seen);
    free(mark);
    free(pairs);
    free(start);
    return good;
}

int main(void)
{
    int bad = 0, first_bad = 0, over_n = 0;
    for (int n = 2; n <= 700; n++) {
        if (!check(n) && !bad++)
            first_bad = n;
        over_n += expected_rounds(n) > n;
    }
    ok(bad == 0, "schedules for 2..700 nodes are complete and disjoint (first failure: %d)",
       first_bad);
    ok(over_n > 0, "%d of those sizes need more than n rounds", over_n);
    ok(check(2793), "2793 nodes (an irregular bench tree)");
    ts_pair *p = NULL;
    int *s = NULL, nr = 0;
    ts_error err = {{0}};
    is_int(ts_allpairs_schedule(1, &p, &s, &nr, &err), TS_EINPUT, "one node is refused");
    return done_testing();
}
