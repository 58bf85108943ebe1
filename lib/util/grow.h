/* toposcope — room for one more element in a growable array (private to lib/). */
#ifndef TOPOSCOPE_GROW_H
#define TOPOSCOPE_GROW_H

#include <stdlib.h>
#include <string.h>

/* Makes room for element n in the array *arr points to (elements of size bytes, *cap of them),
 * doubling it (from `first`) when full. arr is the address of the caller's pointer, of any
 * element type: it is read and written with memcpy. 0, or -1 when out of memory (the array is
 * then as it was). */
static inline int ts_grow(void *arr, size_t size, int *cap, int n, int first)
{
    if (n < *cap)
        return 0;
    char *a;
    memcpy(&a, arr, sizeof a);
    int c = *cap ? 2 * *cap : first;
    char *t = realloc(a, size * (size_t)c);
    if (!t)
        return -1;
    memcpy(arr, &t, sizeof t);
    *cap = c;
    return 0;
}

#endif
