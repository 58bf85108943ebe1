/* toposcope — asking the cache for memory ahead of its use (private to lib/). */
#ifndef TOPOSCOPE_PREFETCH_H
#define TOPOSCOPE_PREFETCH_H

#include <stdatomic.h>

/* Elements ahead a loop of random accesses asks for (ts_prefetch): enough to cover a miss to
 * memory, few enough that the lines are still there when used. */
#define TS_PREFETCH_AHEAD 8

/* Asks the cache for p's line ahead of its use, in the loops whose accesses fall at random in
 * arrays of megabytes (the fast method's big regions at 8192 nodes), where waiting for memory
 * was most of their cost. write: the line is to be written. (The fence, which emits no code,
 * keeps GCC 12 from dropping the prefetch as dead code in a loop.) */
static inline void ts_prefetch(const void *p, int write)
{
    if (write)
        __builtin_prefetch(p, 1);
    else
        __builtin_prefetch(p, 0);
    atomic_signal_fence(memory_order_seq_cst);
}

#endif
