/* toposcope — interned strings with dense indices (private to lib/).
 *
 * Tables keyed by a link id or a job id (the report's suspects, the baseline builder) keep one
 * copy of each distinct string here and index their own arrays by its number: a record that
 * names 200 000 links costs each of them its length once, not a fixed TS_LINK_ID_MAX buffer
 * per table, and lookups are one hash probe. Pointers to the strings stay valid until the pool
 * is freed (they live in chunks that never move). */
#ifndef TOPOSCOPE_STRPOOL_H
#define TOPOSCOPE_STRPOOL_H

#include <stddef.h>

typedef struct ts_strpool ts_strpool;

ts_strpool *ts_strpool_new(void);
void ts_strpool_free(ts_strpool *p);
/* The number of s (0, 1, 2, ... in order of first appearance), added when new; -1 when out of
 * memory. */
int ts_strpool_intern(ts_strpool *p, const char *s);
/* Interns s as ts_strpool_intern does and makes room for its number in a table the caller keeps
 * beside the pool: rows points to the caller's pointer to `size`-byte rows (void * so that any
 * row type fits; the pointer is read and written with memcpy), *cap counts them and doubles when
 * full. *fresh is 1 when s is new: its row is then zeroed. -1 when out of memory. */
int ts_strpool_intern_row(ts_strpool *p, const char *s, void *rows, size_t size, int *cap, int *fresh);
/* The number of s, or -1 when it was never interned. */
int ts_strpool_find(const ts_strpool *p, const char *s);
const char *ts_strpool_str(const ts_strpool *p, int i);
int ts_strpool_count(const ts_strpool *p);

#endif
