/* toposcope — Slurm hostlist expressions (expansion, compression, natural order). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/hostlist.h"

int ts_hostname_cmp(const char *a, const char *b)
{
    /* Compare runs of digits by value (then by width, so "01" < "1" is stable), text bytewise. */
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            const char *sa = a, *sb = b;
            while (*sa == '0' && isdigit((unsigned char)sa[1]))
                sa++;
            while (*sb == '0' && isdigit((unsigned char)sb[1]))
                sb++;
            const char *ea = sa, *eb = sb;
            while (isdigit((unsigned char)*ea))
                ea++;
            while (isdigit((unsigned char)*eb))
                eb++;
            if (ea - sa != eb - sb)
                return (ea - sa) < (eb - sb) ? -1 : 1;
            int c = strncmp(sa, sb, (size_t)(ea - sa));
            if (c)
                return c;
            if ((ea - a) != (eb - b))
                return (ea - a) < (eb - b) ? -1 : 1;
            a = ea;
            b = eb;
        } else {
            if (*a != *b)
                return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return (unsigned char)*a - (unsigned char)*b;
}

/* ------------------------------------------------------------------------------------------
 * Expansion.  The expression is parsed once into hosts, each a run of segments (literal text
 * or a bracket group of ranges); then the total count is checked against the bound before a
 * single allocation, and names are generated with an odometer over the groups, so neither the
 * parse nor the generation recurses or depends on nesting. */

#define NUMBER_DIGITS_MAX 9

typedef struct range {
    unsigned lo, hi;
    int width;          /* digits of the lower bound: zero padding applied to every number */
} range;

typedef struct segment {
    size_t lit_off, lit_len;        /* literal text, when nranges == 0 */
    size_t first_range, nranges;
    size_t col;                     /* 1-based column of the segment, for messages */
} segment;

typedef struct host_expr {
    size_t first_seg, nsegs;
    size_t col;
    size_t name_max;                /* longest name it can produce */
    unsigned long long count;       /* names it produces */
} host_expr;

typedef struct parse_state {
    const char *expr;
    size_t len;
    range *ranges;
    size_t nranges, cap_ranges;
    segment *segs;
    size_t nsegs, cap_segs;
    host_expr *hosts;
    size_t nhosts, cap_hosts;
    ts_error *err;
} parse_state;

static int grow(void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return TS_OK;
    size_t ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*array, ncap * elem);
    if (!p)
        return TS_ENOMEM;
    *array = p;
    *cap = ncap;
    return TS_OK;
}

static int decimal_width(unsigned v)
{
    int w = 1;
    while (v >= 10) {
        v /= 10;
        w++;
    }
    return w;
}

static int describe_char(char c, char *buf, size_t size)
{
    if (isprint((unsigned char)c))
        return snprintf(buf, size, "'%c'", c);
    return snprintf(buf, size, "byte 0x%02x", (unsigned char)c);
}

/* Characters no hostname can hold; reported with their column. */
static int check_plain_char(parse_state *ps, size_t i)
{
    unsigned char c = (unsigned char)ps->expr[i];
    if (c == '\0')
        return ts_fail(ps->err, TS_EINPUT, "column %zu: NUL byte in hostlist", i + 1);
    if (isspace(c))
        return ts_fail(ps->err, TS_EINPUT, "column %zu: whitespace in hostlist", i + 1);
    if (iscntrl(c))
        return ts_fail(ps->err, TS_EINPUT, "column %zu: control character 0x%02x in hostlist", i + 1, c);
    return TS_OK;
}

static int parse_number(parse_state *ps, size_t *pos, size_t end, unsigned *value, int *width)
{
    size_t i = *pos, start = i;
    while (i < end && isdigit((unsigned char)ps->expr[i]))
        i++;
    if (i == start) {
        if (i >= end || ps->expr[i] == ',' || ps->expr[i] == '-')
            return ts_fail(ps->err, TS_EINPUT, "column %zu: empty element in bracket group", start + 1);
        int rc = check_plain_char(ps, i);
        if (rc != TS_OK)
            return rc;
        char what[16];
        describe_char(ps->expr[i], what, sizeof what);
        return ts_fail(ps->err, TS_EINPUT, "column %zu: %s in a range (only digits, '-' and ',' belong there)",
                       i + 1, what);
    }
    if (i - start > NUMBER_DIGITS_MAX)
        return ts_fail(ps->err, TS_EINPUT, "column %zu: number has more than %d digits", start + 1,
                       NUMBER_DIGITS_MAX);
    unsigned v = 0;
    for (size_t k = start; k < i; k++)
        v = v * 10 + (unsigned)(ps->expr[k] - '0');
    *value = v;
    *width = (int)(i - start);
    *pos = i;
    return TS_OK;
}

/* One element of a bracket group: "N" or "LO-HI", ending at ',' or ']' (end). */
static int parse_range(parse_state *ps, size_t *pos, size_t end)
{
    size_t start = *pos;
    range r;
    int rc = parse_number(ps, pos, end, &r.lo, &r.width);
    if (rc != TS_OK)
        return rc;
    r.hi = r.lo;
    if (*pos < end && ps->expr[*pos] == '-') {
        (*pos)++;
        int hi_width;
        rc = parse_number(ps, pos, end, &r.hi, &hi_width);
        if (rc != TS_OK)
            return rc;
        if (r.lo > r.hi)
            return ts_fail(ps->err, TS_EINPUT, "column %zu: range %.*s has lo > hi", start + 1,
                           (int)(*pos - start), ps->expr + start);
    }
    if (*pos < end && ps->expr[*pos] != ',') {
        size_t i = *pos;
        rc = check_plain_char(ps, i);
        if (rc != TS_OK)
            return rc;
        char what[16];
        describe_char(ps->expr[i], what, sizeof what);
        return ts_fail(ps->err, TS_EINPUT, "column %zu: %s in a range (only digits, '-' and ',' belong there)",
                       i + 1, what);
    }
    if (grow((void **)&ps->ranges, &ps->cap_ranges, ps->nranges + 1, sizeof *ps->ranges) != TS_OK)
        return ts_fail(ps->err, TS_ENOMEM, "out of memory");
    ps->ranges[ps->nranges++] = r;
    return TS_OK;
}

/* A bracket group starting at '[' (pos); leaves pos after the matching ']'. */
static int parse_group(parse_state *ps, size_t *pos, segment *seg)
{
    size_t open = *pos, i = open + 1, close = i;
    while (close < ps->len && ps->expr[close] != ']') {
        if (ps->expr[close] == '[')
            return ts_fail(ps->err, TS_EINPUT, "column %zu: nested '[' inside the bracket opened at column %zu",
                           close + 1, open + 1);
        close++;
    }
    if (close >= ps->len)
        return ts_fail(ps->err, TS_EINPUT, "column %zu: unterminated '['", open + 1);
    if (close == i)
        return ts_fail(ps->err, TS_EINPUT, "column %zu: empty bracket group", open + 1);
    seg->first_range = ps->nranges;
    for (;;) {
        int rc = parse_range(ps, &i, close);
        if (rc != TS_OK)
            return rc;
        if (i == close)
            break;
        i++;                                    /* the ',' */
        if (i == close)
            return ts_fail(ps->err, TS_EINPUT, "column %zu: empty element in bracket group", i + 1);
    }
    seg->nranges = ps->nranges - seg->first_range;
    *pos = close + 1;
    return TS_OK;
}

static int add_segment(parse_state *ps, const segment *seg)
{
    if (grow((void **)&ps->segs, &ps->cap_segs, ps->nsegs + 1, sizeof *ps->segs) != TS_OK)
        return ts_fail(ps->err, TS_ENOMEM, "out of memory");
    ps->segs[ps->nsegs++] = *seg;
    return TS_OK;
}

/* Count and longest name of a host, with the bound checked at every multiplication. */
static int measure_host(parse_state *ps, host_expr *h)
{
    unsigned long long count = 1;
    size_t name_max = 0;
    for (size_t s = h->first_seg; s < h->first_seg + h->nsegs; s++) {
        const segment *seg = &ps->segs[s];
        if (seg->nranges == 0) {
            name_max += seg->lit_len;
            continue;
        }
        unsigned long long values = 0;
        int widest = 0;
        for (size_t r = seg->first_range; r < seg->first_range + seg->nranges; r++) {
            const range *rg = &ps->ranges[r];
            values += (unsigned long long)rg->hi - rg->lo + 1;
            int w = decimal_width(rg->hi);
            if (rg->width > w)
                w = rg->width;
            if (w > widest)
                widest = w;
            if (values > TS_HOSTLIST_MAX_HOSTS)
                break;
        }
        name_max += (size_t)widest;
        if (values > TS_HOSTLIST_MAX_HOSTS || count * values > TS_HOSTLIST_MAX_HOSTS)
            return ts_fail(ps->err, TS_EINPUT, "column %zu: expands to more than %d hosts", h->col,
                           TS_HOSTLIST_MAX_HOSTS);
        count *= values;
    }
    if (name_max > TS_HOSTNAME_MAX)
        return ts_fail(ps->err, TS_EINPUT, "column %zu: hostname longer than %d characters", h->col,
                       TS_HOSTNAME_MAX);
    h->count = count;
    h->name_max = name_max;
    return TS_OK;
}

/* One top-level host: literal text and bracket groups up to a ',' outside brackets. */
static int parse_host(parse_state *ps, size_t *pos)
{
    host_expr h = { .first_seg = ps->nsegs, .col = *pos + 1 };
    size_t i = *pos;
    while (i < ps->len && ps->expr[i] != ',') {
        char c = ps->expr[i];
        segment seg = { .col = i + 1 };
        if (c == '[') {
            int rc = parse_group(ps, &i, &seg);
            if (rc != TS_OK)
                return rc;
        } else if (c == ']') {
            return ts_fail(ps->err, TS_EINPUT, "column %zu: ']' without a matching '['", i + 1);
        } else {
            seg.lit_off = i;
            while (i < ps->len && ps->expr[i] != ',' && ps->expr[i] != '[' && ps->expr[i] != ']') {
                int rc = check_plain_char(ps, i);
                if (rc != TS_OK)
                    return rc;
                i++;
            }
            seg.lit_len = i - seg.lit_off;
        }
        int rc = add_segment(ps, &seg);
        if (rc != TS_OK)
            return rc;
    }
    if (i == *pos)
        return ts_fail(ps->err, TS_EINPUT, "column %zu: empty host name", i + 1);
    h.nsegs = ps->nsegs - h.first_seg;
    int rc = measure_host(ps, &h);
    if (rc != TS_OK)
        return rc;
    if (grow((void **)&ps->hosts, &ps->cap_hosts, ps->nhosts + 1, sizeof *ps->hosts) != TS_OK)
        return ts_fail(ps->err, TS_ENOMEM, "out of memory");
    ps->hosts[ps->nhosts++] = h;
    *pos = i;
    return TS_OK;
}

/* Odometer position inside one bracket group. */
typedef struct group_cursor {
    size_t range;       /* index into ps->ranges */
    unsigned value;
} group_cursor;

static int generate_host(const parse_state *ps, const host_expr *h, group_cursor *cur, char **out,
                         size_t *nout)
{
    for (size_t s = 0; s < h->nsegs; s++) {
        const segment *seg = &ps->segs[h->first_seg + s];
        if (seg->nranges) {
            cur[s].range = seg->first_range;
            cur[s].value = ps->ranges[seg->first_range].lo;
        }
    }
    for (unsigned long long n = 0; n < h->count; n++) {
        char name[TS_HOSTNAME_MAX + 1];
        size_t at = 0;
        for (size_t s = 0; s < h->nsegs; s++) {
            const segment *seg = &ps->segs[h->first_seg + s];
            if (seg->nranges == 0) {
                memcpy(name + at, ps->expr + seg->lit_off, seg->lit_len);
                at += seg->lit_len;
            } else {
                int w = snprintf(name + at, sizeof name - at, "%0*u", ps->ranges[cur[s].range].width,
                                 cur[s].value);
                at += (size_t)w;
            }
        }
        name[at] = '\0';
        out[*nout] = strdup(name);
        if (!out[*nout])
            return TS_ENOMEM;
        (*nout)++;
        /* advance the odometer: the rightmost group turns fastest */
        for (size_t s = h->nsegs; s-- > 0;) {
            const segment *seg = &ps->segs[h->first_seg + s];
            if (seg->nranges == 0)
                continue;
            group_cursor *c = &cur[s];
            if (c->value < ps->ranges[c->range].hi) {
                c->value++;
                break;
            }
            if (c->range + 1 < seg->first_range + seg->nranges) {
                c->range++;
                c->value = ps->ranges[c->range].lo;
                break;
            }
            c->range = seg->first_range;
            c->value = ps->ranges[c->range].lo;
        }
    }
    return TS_OK;
}

static void parse_state_free(parse_state *ps)
{
    free(ps->ranges);
    free(ps->segs);
    free(ps->hosts);
}

int ts_hostlist_expand(const char *expr, size_t len, ts_hostlist *list, ts_error *err)
{
    list->count = 0;
    list->hosts = NULL;
    if (!expr || len == 0)
        return ts_fail(err, TS_EINPUT, "column 1: empty hostlist");
    parse_state ps = { .expr = expr, .len = len, .err = err };
    size_t pos = 0;
    unsigned long long total = 0;
    int rc = TS_OK;
    for (;;) {
        rc = parse_host(&ps, &pos);
        if (rc != TS_OK)
            goto out;
        total += ps.hosts[ps.nhosts - 1].count;
        if (total > TS_HOSTLIST_MAX_HOSTS) {
            rc = ts_fail(err, TS_EINPUT, "column %zu: the list expands to more than %d hosts",
                         ps.hosts[ps.nhosts - 1].col, TS_HOSTLIST_MAX_HOSTS);
            goto out;
        }
        if (pos >= len)
            break;
        pos++;                                  /* the ',' between hosts */
        if (pos >= len) {
            rc = ts_fail(err, TS_EINPUT, "column %zu: empty host name after ','", pos);
            goto out;
        }
    }
    size_t max_segs = 0;
    for (size_t h = 0; h < ps.nhosts; h++)
        if (ps.hosts[h].nsegs > max_segs)
            max_segs = ps.hosts[h].nsegs;
    char **hosts = malloc(sizeof *hosts * (size_t)total);
    group_cursor *cur = malloc(sizeof *cur * max_segs);
    if (!hosts || !cur) {
        free(hosts);
        free(cur);
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto out;
    }
    size_t n = 0;
    for (size_t h = 0; h < ps.nhosts && rc == TS_OK; h++)
        rc = generate_host(&ps, &ps.hosts[h], cur, hosts, &n);
    free(cur);
    if (rc != TS_OK) {
        while (n > 0)
            free(hosts[--n]);
        free(hosts);
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto out;
    }
    list->hosts = hosts;
    list->count = n;
out:
    parse_state_free(&ps);
    return rc;
}

void ts_hostlist_free(ts_hostlist *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->count; i++)
        free(list->hosts[i]);
    free(list->hosts);
    list->hosts = NULL;
    list->count = 0;
}

/* ------------------------------------------------------------------------------------------
 * Compression.  Each name splits around its last run of digits into prefix, number, suffix.
 * Names sharing prefix and suffix form one bracket group (placed where the first of them
 * appeared); inside it numbers are sorted and consecutive ones merged into ranges.  A range
 * may grow from "8" to "10" because expansion pads only to the lower bound's width, but not
 * from "09" to "010". */

typedef struct name_key {
    const char *name;
    size_t prefix_len, digits_len;  /* digits_len 0: the name is kept literally */
    unsigned value;
    size_t order;                   /* input position */
    size_t group_first;             /* input position of the group's first member */
} name_key;

static void split_name(const char *name, name_key *k)
{
    size_t len = strlen(name), end = len;
    while (end > 0 && !isdigit((unsigned char)name[end - 1]))
        end--;
    size_t start = end;
    while (start > 0 && isdigit((unsigned char)name[start - 1]))
        start--;
    k->name = name;
    k->prefix_len = start;
    k->digits_len = end - start;
    k->value = 0;
    /* names that could not come back through expansion stay literal */
    if (k->digits_len > NUMBER_DIGITS_MAX || strpbrk(name, "[],") != NULL) {
        k->prefix_len = len;
        k->digits_len = 0;
        return;
    }
    for (size_t i = start; i < end; i++)
        k->value = k->value * 10 + (unsigned)(name[i] - '0');
}

static int same_group(const name_key *a, const name_key *b)
{
    if (a->digits_len == 0 || b->digits_len == 0)
        return a->digits_len == b->digits_len && strcmp(a->name, b->name) == 0;
    return a->prefix_len == b->prefix_len && memcmp(a->name, b->name, a->prefix_len) == 0 &&
           strcmp(a->name + a->prefix_len + a->digits_len, b->name + b->prefix_len + b->digits_len) == 0;
}

static int cmp_group_key(const void *pa, const void *pb)
{
    const name_key *a = pa, *b = pb;
    if ((a->digits_len == 0) != (b->digits_len == 0))
        return a->digits_len == 0 ? -1 : 1;
    if (a->digits_len == 0) {
        int c = strcmp(a->name, b->name);
        return c ? c : (a->order < b->order ? -1 : a->order > b->order);
    }
    size_t pl = a->prefix_len < b->prefix_len ? a->prefix_len : b->prefix_len;
    int c = memcmp(a->name, b->name, pl);
    if (c)
        return c;
    if (a->prefix_len != b->prefix_len)
        return a->prefix_len < b->prefix_len ? -1 : 1;
    c = strcmp(a->name + a->prefix_len + a->digits_len, b->name + b->prefix_len + b->digits_len);
    if (c)
        return c;
    if (a->value != b->value)
        return a->value < b->value ? -1 : 1;
    if (a->digits_len != b->digits_len)
        return a->digits_len < b->digits_len ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

static int cmp_group_first(const void *pa, const void *pb)
{
    const name_key *a = pa, *b = pb;
    if (a->group_first != b->group_first)
        return a->group_first < b->group_first ? -1 : 1;
    return 0;
}

typedef struct strbuf {
    char *s;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_append(strbuf *sb, const char *s, size_t n)
{
    if (sb->failed)
        return;
    if (grow((void **)&sb->s, &sb->cap, sb->len + n + 1, 1) != TS_OK) {
        sb->failed = 1;
        return;
    }
    memcpy(sb->s + sb->len, s, n);
    sb->len += n;
    sb->s[sb->len] = '\0';
}

static void sb_number(strbuf *sb, size_t width, unsigned value)
{
    char num[32];
    int n = snprintf(num, sizeof num, "%0*u", (int)width, value);
    sb_append(sb, num, (size_t)n);
}

/* Can the name (value, digits) continue a range that started with the given width? */
static int continues_range(const name_key *k, unsigned prev, size_t width)
{
    if (k->value != prev + 1)
        return 0;
    size_t natural = (size_t)decimal_width(k->value);
    return k->digits_len == (natural > width ? natural : width);
}

static void emit_group(strbuf *sb, const name_key *g, size_t n)
{
    if (g[0].digits_len == 0) {
        for (size_t i = 0; i < n; i++) {
            if (i)
                sb_append(sb, ",", 1);
            sb_append(sb, g[i].name, strlen(g[i].name));
        }
        return;
    }
    const char *suffix = g[0].name + g[0].prefix_len + g[0].digits_len;
    sb_append(sb, g[0].name, g[0].prefix_len);
    if (n == 1) {
        sb_append(sb, g[0].name + g[0].prefix_len, g[0].digits_len);
        sb_append(sb, suffix, strlen(suffix));
        return;
    }
    sb_append(sb, "[", 1);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && continues_range(&g[j + 1], g[j].value, g[i].digits_len))
            j++;
        if (i)
            sb_append(sb, ",", 1);
        sb_number(sb, g[i].digits_len, g[i].value);
        if (j > i) {
            sb_append(sb, "-", 1);
            sb_number(sb, g[i].digits_len, g[j].value);
        }
        i = j + 1;
    }
    sb_append(sb, "]", 1);
    sb_append(sb, suffix, strlen(suffix));
}

char *ts_hostlist_compress(char *const *names, size_t count)
{
    strbuf sb = { 0 };
    sb_append(&sb, "", 0);
    if (count == 0)
        return sb.s;
    name_key *keys = malloc(sizeof *keys * count);
    if (!keys) {
        free(sb.s);
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        split_name(names[i], &keys[i]);
        keys[i].order = i;
    }
    qsort(keys, count, sizeof *keys, cmp_group_key);
    for (size_t i = 0; i < count;) {
        size_t j = i, first = keys[i].order;
        while (j < count && same_group(&keys[i], &keys[j])) {
            if (keys[j].order < first)
                first = keys[j].order;
            j++;
        }
        for (size_t k = i; k < j; k++)
            keys[k].group_first = first;
        i = j;
    }
    /* Groups have distinct first positions, so sorting by it keeps each group contiguous; the
     * order inside a group is restored by re-sorting each run by its key. */
    qsort(keys, count, sizeof *keys, cmp_group_first);
    for (size_t i = 0; i < count;) {
        size_t j = i;
        while (j < count && keys[j].group_first == keys[i].group_first)
            j++;
        qsort(keys + i, j - i, sizeof *keys, cmp_group_key);
        if (i)
            sb_append(&sb, ",", 1);
        emit_group(&sb, keys + i, j - i);
        i = j;
    }
    free(keys);
    if (sb.failed) {
        free(sb.s);
        return NULL;
    }
    return sb.s;
}
