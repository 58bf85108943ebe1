/* toposcope — interned strings with dense indices (see util/strpool.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "util/strpool.h"

#define CHUNK_BYTES (64u << 10)

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    char data[];
} chunk;

struct ts_strpool {
    chunk *chunks;                   /* newest first; strings never move */
    const char **str;                /* by number */
    int n, cap;
    int *slot;                       /* open addressing: numbers, -1 empty */
    int slot_cap;                    /* a power of two, at least twice n */
};

static uint64_t hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h ^ (h >> 32);
}

ts_strpool *ts_strpool_new(void)
{
    return calloc(1, sizeof(ts_strpool));
}

void ts_strpool_free(ts_strpool *p)
{
    if (!p)
        return;
    while (p->chunks) {
        chunk *c = p->chunks;
        p->chunks = c->next;
        free(c);
    }
    free(p->str);
    free(p->slot);
    free(p);
}

int ts_strpool_find(const ts_strpool *p, const char *s)
{
    if (!p->slot_cap)
        return -1;
    size_t h = hash(s) & (size_t)(p->slot_cap - 1);
    while (p->slot[h] >= 0) {
        if (!strcmp(p->str[p->slot[h]], s))
            return p->slot[h];
        h = (h + 1) & (size_t)(p->slot_cap - 1);
    }
    return -1;
}

static int grow_slots(ts_strpool *p)
{
    int cap = p->slot_cap ? 2 * p->slot_cap : 256;
    int *slot = malloc(sizeof(int) * (size_t)cap);
    if (!slot)
        return -1;
    for (int i = 0; i < cap; i++)
        slot[i] = -1;
    for (int i = 0; i < p->n; i++) {
        size_t h = hash(p->str[i]) & (size_t)(cap - 1);
        while (slot[h] >= 0)
            h = (h + 1) & (size_t)(cap - 1);
        slot[h] = i;
    }
    free(p->slot);
    p->slot = slot;
    p->slot_cap = cap;
    return 0;
}

/* A copy of s (len bytes and its NUL) in the newest chunk, or a new one. */
static const char *store(ts_strpool *p, const char *s, size_t len)
{
    chunk *c = p->chunks;
    if (!c || c->cap - c->used < len + 1) {
        size_t cap = len + 1 > CHUNK_BYTES ? len + 1 : CHUNK_BYTES;
        if (!(c = malloc(sizeof *c + cap)))
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = p->chunks;
        p->chunks = c;
    }
    char *out = c->data + c->used;
    memcpy(out, s, len + 1);
    c->used += len + 1;
    return out;
}

int ts_strpool_intern(ts_strpool *p, const char *s)
{
    int i = ts_strpool_find(p, s);
    if (i >= 0)
        return i;
    if (p->n == INT32_MAX / 2 || (2 * (p->n + 1) > p->slot_cap && grow_slots(p)))
        return -1;
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 256;
        const char **t = realloc(p->str, sizeof *t * (size_t)cap);
        if (!t)
            return -1;
        p->str = t;
        p->cap = cap;
    }
    const char *copy = store(p, s, strlen(s));
    if (!copy)
        return -1;
    size_t h = hash(s) & (size_t)(p->slot_cap - 1);
    while (p->slot[h] >= 0)
        h = (h + 1) & (size_t)(p->slot_cap - 1);
    p->str[p->n] = copy;
    p->slot[h] = p->n;
    return p->n++;
}

int ts_strpool_intern_row(ts_strpool *p, const char *s, void *rows, size_t size, int *cap, int *fresh)
{
    int before = p->n, k = ts_strpool_intern(p, s);
    *fresh = k >= 0 && k == before;
    if (!*fresh)
        return k;
    if (ts_grow(rows, size, cap, k, 64)) {
        p->n--;                      /* forget s again: it has no row */
        size_t h = hash(s) & (size_t)(p->slot_cap - 1);
        while (p->slot[h] != k)
            h = (h + 1) & (size_t)(p->slot_cap - 1);
        p->slot[h] = -1;
        return -1;
    }
    char *table;
    memcpy(&table, rows, sizeof table);
    memset(table + size * (size_t)k, 0, size);
    return k;
}

const char *ts_strpool_str(const ts_strpool *p, int i)
{
    return p->str[i];
}

int ts_strpool_count(const ts_strpool *p)
{
    return p->n;
}
