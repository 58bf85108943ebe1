/* toposcope — a bounded YAML document tree for the schema checks of lib/ (private to lib/).
 *
 * libyaml's events are collected into one flat array of nodes (iteratively, with a depth and a
 * node-count limit, no aliases, one document), so a schema check can walk the input with
 * positions at hand and nothing recurses on attacker-controlled depth. Every message a checker
 * produces names SOURCE:LINE:COLUMN of the node it is about. */
#ifndef TOPOSCOPE_YDOC_H
#define TOPOSCOPE_YDOC_H

#include <stddef.h>
#include <yaml.h>
#include "toposcope/error.h"

enum { TS_Y_SCALAR, TS_Y_MAP, TS_Y_SEQ };

typedef struct ts_ynode {
    int type;
    int line, col;          /* 1-based */
    char *text;             /* scalars: NUL-terminated copy */
    size_t len;
    int plain;              /* plain style: may be a number, a bool or null */
    int first, last, next;  /* children; a mapping holds key, value, key, value, ... */
    int n;                  /* number of children */
} ts_ynode;

typedef struct ts_ylimits {
    size_t max_bytes;
    int max_depth;
    int max_nodes;
} ts_ylimits;

typedef struct ts_ydoc {
    const char *src;        /* names the input in messages; not owned */
    ts_ynode *v;
    int n, cap;
    int root;               /* -1 for an empty document */
    int max_nodes;
} ts_ydoc;

/* Parse text (len bytes, NUL not required). Errors: TS_EINPUT/TS_ELIMIT with "SRC:L:C: ...". */
int ts_ydoc_parse(ts_ydoc *d, const char *text, size_t len, const char *src,
                  const ts_ylimits *lim, ts_error *err);
void ts_ydoc_free(ts_ydoc *d);

/* Streaming: a reader of a large file walks its outer structure with libyaml itself and hands
 * each small entry to this tree, so the schema getters below (and their messages) serve it too
 * while memory stays one entry. init makes an empty tree, reset empties it keeping its storage,
 * add_value appends the value that starts with event first (the caller still owns first; the
 * rest of the value is pulled from ps) and returns its node index or an error code (< 0). */
void ts_ydoc_init(ts_ydoc *d, const char *src, int max_nodes);
void ts_ydoc_reset(ts_ydoc *d);
int ts_ydoc_add_value(ts_ydoc *d, yaml_parser_t *ps, const yaml_event_t *first, int max_depth,
                      ts_error *err);
/* The parser's next event into *ev, the one *have says it holds deleted first; *have says
 * whether it holds one now. A parser's error comes back as ts_ydoc_syntax_error's message. */
int ts_ydoc_next_event(const ts_ydoc *d, yaml_parser_t *ps, yaml_event_t *ev, int *have, ts_error *err);
/* "SRC:LINE:COL: YAML syntax error: ..." for the parser's error. */
int ts_ydoc_syntax_error(const ts_ydoc *d, const yaml_parser_t *ps, ts_error *err);

/* Read a whole file of at most max bytes into a malloc'd buffer (NUL-terminated). */
int ts_ydoc_read_file(const char *path, size_t max, char **buf, size_t *len, ts_error *err);

/* "SRC:LINE:COL: message" at a parser's mark (a streaming reader's position); returns code. */
int ts_ydoc_fail_at(const ts_ydoc *d, int code, const yaml_mark_t *m, ts_error *err, const char *fmt, ...)
    TS_PRINTF(5, 6);
/* "SRC:LINE:COL: message" about node i; returns TS_EINPUT. */
int ts_ydoc_fail(const ts_ydoc *d, int i, ts_error *err, const char *fmt, ...) TS_PRINTF(4, 5);

const char *ts_ydoc_type_name(const ts_ynode *y);
int ts_ydoc_is_null(const ts_ynode *y);

/* A mapping's keys must be plain or quoted scalars, each once, each one of allowed (a
 * NULL-terminated list); the message of a stranger lists the allowed keys. `where` names the
 * mapping in messages ("the top level", "'placement'"). */
int ts_ydoc_check_keys(const ts_ydoc *d, int map, const char *const *allowed, const char *where,
                       ts_error *err);
/* The value of key in mapping map, or -1. */
int ts_ydoc_get(const ts_ydoc *d, int map, const char *key);

/* Typed values; each message names the key, what was found and the allowed values. */
int ts_ydoc_int(const ts_ydoc *d, int i, const char *key, long lo, long hi, long *out, ts_error *err);
int ts_ydoc_num(const ts_ydoc *d, int i, const char *key, double lo, double hi, double *out,
                ts_error *err);
int ts_ydoc_bool(const ts_ydoc *d, int i, const char *key, int *out, ts_error *err);
/* One of choices (NULL-terminated); *out is its index. */
int ts_ydoc_choice(const ts_ydoc *d, int i, const char *key, const char *const *choices, int *out,
                   ts_error *err);
/* A non-empty scalar of fewer than max bytes without control characters, copied into out. */
int ts_ydoc_name(const ts_ydoc *d, int i, const char *key, char *out, size_t max, ts_error *err);

#endif
