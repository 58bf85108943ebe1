/* toposcope agents — wire format: header checks, authenticators, replay window, payloads. */
#include <math.h>
#include <string.h>
#include <sodium.h>
#include "wire.h"

static const char *const drop_names[WIRE_DROP_END] = {
    "short", "magic", "version", "type", "flags", "job", "length", "sender", "auth", "replay",
    "payload", "unexpected", "address", "rate",
};

const char *wire_drop_name(wire_drop d)
{
    return d < WIRE_DROP_END ? drop_names[d] : "?";
}

uint64_t wire_counters_dropped(const wire_counters *c)
{
    uint64_t n = 0;
    for (int i = 0; i < WIRE_DROP_END; i++)
        n += c->drop[i];
    return n;
}

/* ---- byte order ---- */

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}
static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }
static void putd(uint8_t *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    put64(p, u);
}
static double getd(const uint8_t *p)
{
    uint64_t u = get64(p);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* ---- keys and authenticators ---- */

int wire_init(void)
{
    return sodium_init() < 0 ? -1 : 0;
}

void wire_keys_derive(wire_keys *k, const uint8_t session_key[WIRE_KEY_BYTES])
{
    /* Separate subkeys, so a probe tag (short, computed by every agent thousands of times)
     * can never stand in for a control MAC. */
    crypto_kdf_derive_from_key(k->mac, sizeof k->mac, 1, "tscpctrl", session_key);
    crypto_kdf_derive_from_key(k->tag, sizeof k->tag, 2, "tscpprob", session_key);
}

size_t wire_auth_len(int type)
{
    if (type == WIRE_HELLO || type == WIRE_KEY)
        return 0;
    if (type == WIRE_PROBE || type == WIRE_PROBE_REPLY)
        return WIRE_TAG;
    return WIRE_MAC;
}

static void authenticator(const wire_keys *k, int type, const uint8_t *msg, size_t n, uint8_t *out)
{
    size_t len = wire_auth_len(type);
    const uint8_t *key = len == WIRE_TAG ? k->tag : k->mac;
    crypto_generichash(out, len < crypto_generichash_BYTES_MIN ? crypto_generichash_BYTES_MIN : len,
                       msg, n, key, 32);
}

size_t wire_build(uint8_t *buf, const wire_keys *k, int type, uint32_t job, uint16_t sender,
                  uint64_t seq, const void *payload, size_t len)
{
    size_t alen = wire_auth_len(type);
    if (type <= 0 || type >= WIRE_TYPE_END || len > WIRE_MAX_PAYLOAD ||
        WIRE_HEADER + len + alen > WIRE_MAX_DATAGRAM || (alen && !k))
        return 0;
    put32(buf, WIRE_MAGIC);
    buf[4] = WIRE_VERSION;
    buf[5] = (uint8_t)type;
    put16(buf + 6, 0);
    put32(buf + 8, job);
    put16(buf + 12, sender);
    put16(buf + 14, (uint16_t)len);
    put64(buf + 16, seq);
    if (len)
        memcpy(buf + WIRE_HEADER, payload, len);
    if (alen) {
        uint8_t mac[crypto_generichash_BYTES_MIN > WIRE_MAC ? crypto_generichash_BYTES_MIN : WIRE_MAC];
        authenticator(k, type, buf, WIRE_HEADER + len, mac);
        memcpy(buf + WIRE_HEADER + len, mac, alen);
    }
    return WIRE_HEADER + len + alen;
}

static int drop(wire_counters *c, wire_drop why)
{
    if (c)
        c->drop[why]++;
    return -1;
}

int wire_check_header(const uint8_t *buf, size_t n, uint32_t job, int nsenders, wire_hdr *h,
                      wire_counters *c)
{
    if (c)
        c->received++;
    if (n < WIRE_HEADER)
        return drop(c, WIRE_DROP_SHORT);
    if (get32(buf) != WIRE_MAGIC)
        return drop(c, WIRE_DROP_MAGIC);
    if (buf[4] != WIRE_VERSION)
        return drop(c, WIRE_DROP_VERSION);
    if (buf[5] == 0 || buf[5] >= WIRE_TYPE_END)
        return drop(c, WIRE_DROP_TYPE);
    if (get16(buf + 6) != 0)
        return drop(c, WIRE_DROP_FLAGS);
    if (get32(buf + 8) != job)
        return drop(c, WIRE_DROP_JOB);
    h->type = buf[5];
    h->job = job;
    h->sender = get16(buf + 12);
    h->length = get16(buf + 14);
    h->seq = get64(buf + 16);
    if (h->length > WIRE_MAX_PAYLOAD || n != WIRE_HEADER + h->length + wire_auth_len(h->type))
        return drop(c, WIRE_DROP_LENGTH);
    if (h->sender != WIRE_LEADER && h->sender >= nsenders)
        return drop(c, WIRE_DROP_SENDER);
    return 0;
}

int wire_check_auth(const uint8_t *buf, size_t n, const wire_hdr *h, const wire_keys *k,
                    wire_counters *c)
{
    size_t alen = wire_auth_len(h->type);
    if (!alen)
        return 0;
    if (!k)
        return drop(c, WIRE_DROP_AUTH);
    uint8_t mac[crypto_generichash_BYTES_MIN > WIRE_MAC ? crypto_generichash_BYTES_MIN : WIRE_MAC];
    authenticator(k, h->type, buf, n - alen, mac);
    if (sodium_memcmp(mac, buf + n - alen, alen) != 0)
        return drop(c, WIRE_DROP_AUTH);
    return 0;
}

int wire_window_accept(wire_window *w, uint64_t seq)
{
    if (seq == 0)
        return 0;                   /* senders start at 1 */
    if (seq > w->top) {
        uint64_t shift = seq - w->top;
        w->bits = shift >= 64 ? 0 : w->bits << shift;
        w->bits |= 1;
        w->top = seq;
        return 1;
    }
    uint64_t age = w->top - seq;
    if (age >= 64 || (w->bits >> age) & 1)
        return 0;
    w->bits |= (uint64_t)1 << age;
    return 1;
}

const uint8_t *wire_accept(const uint8_t *buf, size_t n, uint32_t job, int nsenders,
                           const wire_keys *k, wire_window *windows, wire_hdr *h,
                           wire_counters *c)
{
    if (wire_check_header(buf, n, job, nsenders, h, c) != 0 || wire_check_auth(buf, n, h, k, c) != 0)
        return NULL;
    /* Only authenticated messages move the window: an unauthenticated HELLO or KEY could
     * otherwise push it ahead and lock a real sender out. */
    if (wire_auth_len(h->type)) {
        wire_window *w = &windows[h->sender == WIRE_LEADER ? nsenders : h->sender];
        if (!wire_window_accept(w, h->seq)) {
            drop(c, WIRE_DROP_REPLAY);
            return NULL;
        }
    }
    if (c)
        c->accepted++;
    return buf + WIRE_HEADER;
}

/* ---- payloads ---- */

size_t wire_round_encode(const wire_round *r, uint8_t *out)
{
    put32(out, r->round);
    put16(out + 4, r->partner);
    memcpy(out + 6, &r->partner_addr, 4);      /* already network order */
    put16(out + 10, r->partner_port);
    put16(out + 12, (uint16_t)r->rule.min_samples);
    put16(out + 14, (uint16_t)r->rule.max_samples);
    putd(out + 16, r->rule.eps);
    putd(out + 24, r->rule.confidence);
    put16(out + 32, (uint16_t)r->rule.max_lost);
    put32(out + 34, r->timeout_us);
    put32(out + 38, r->budget_us);
    return WIRE_ROUND_LEN;
}

int wire_round_decode(const uint8_t *p, size_t n, wire_round *r)
{
    if (n != WIRE_ROUND_LEN)
        return -1;
    r->round = get32(p);
    r->partner = get16(p + 4);
    memcpy(&r->partner_addr, p + 6, 4);
    r->partner_port = get16(p + 10);
    r->rule.min_samples = get16(p + 12);
    r->rule.max_samples = get16(p + 14);
    r->rule.eps = getd(p + 16);
    r->rule.confidence = getd(p + 24);
    r->rule.max_lost = get16(p + 32);
    r->timeout_us = get32(p + 34);
    r->budget_us = get32(p + 38);
    /* the same bounds ts_stop_rule_check enforces, without its error text */
    if (r->partner >= WIRE_MAX_NODES || r->partner_port == 0 || r->rule.min_samples < 1 ||
        r->rule.max_samples < r->rule.min_samples || r->rule.max_samples > TS_SAMPLES_MAX ||
        !(r->rule.eps > 0 && r->rule.eps < 1) || !(r->rule.confidence > 0 && r->rule.confidence < 1) ||
        r->rule.max_lost < 1 || r->timeout_us == 0 || r->timeout_us > 10000000)
        return -1;
    return 0;
}

size_t wire_result_encode(const wire_result *r, uint8_t *out)
{
    const ts_pair_stats *s = &r->st;
    put32(out, r->round);
    put16(out + 4, (uint16_t)s->samples);
    put16(out + 6, (uint16_t)s->lost);
    put32(out + 8, s->flags);
    const double d[7] = {s->min_us, s->median_us, s->mad_us, s->mean_us, s->est_us, s->ci_us, s->time_us};
    for (int i = 0; i < 7; i++)
        putd(out + 12 + 8 * i, d[i]);
    return WIRE_RESULT_LEN;
}

int wire_result_decode(const uint8_t *p, size_t n, wire_result *r)
{
    if (n != WIRE_RESULT_LEN)
        return -1;
    memset(r, 0, sizeof *r);
    ts_pair_stats *s = &r->st;
    r->round = get32(p);
    s->samples = get16(p + 4);
    s->lost = get16(p + 6);
    s->flags = get32(p + 8);
    double *d[7] = {&s->min_us, &s->median_us, &s->mad_us, &s->mean_us, &s->est_us, &s->ci_us, &s->time_us};
    for (int i = 0; i < 7; i++)
        *d[i] = getd(p + 12 + 8 * i);
    if (s->samples > TS_SAMPLES_MAX || s->flags & ~(unsigned)0xf || !(s->time_us >= 0) ||
        !isfinite(s->time_us))
        return -1;
    /* With samples every statistic is a finite non-negative time, but for the interval's
     * half-width, which one sample leaves unknown: +infinity (ts_sampler_finish). A pair that
     * answered once before three losses in a row sends just that; refused, its RESULT was
     * resent as the same datagram, a replay from then on, and the round waited for it until
     * the deadline. Without samples none is used. */
    if (s->samples > 0)
        for (int i = 0; i < 6; i++)
            if (!(*d[i] >= 0) || (!isfinite(*d[i]) && !(d[i] == &s->ci_us && s->samples == 1)))
                return -1;
    return 0;
}

size_t wire_u32_encode(uint32_t v, uint8_t *out)
{
    put32(out, v);
    return WIRE_U32_LEN;
}

int wire_u32_decode(const uint8_t *p, size_t n, uint32_t *v)
{
    if (n != WIRE_U32_LEN)
        return -1;
    *v = get32(p);
    return 0;
}

size_t wire_probe_encode(const wire_probe *p, uint8_t *out)
{
    put32(out, p->round);
    put32(out + 4, p->probe);
    put64(out + 8, p->t_send_ns);
    return WIRE_PROBE_LEN;
}

int wire_probe_decode(const uint8_t *p, size_t n, wire_probe *out)
{
    if (n != WIRE_PROBE_LEN)
        return -1;
    out->round = get32(p);
    out->probe = get32(p + 4);
    out->t_send_ns = get64(p + 8);
    return 0;
}

size_t wire_file_encode(const wire_file *f, uint8_t *out)
{
    out[0] = f->file;
    out[1] = f->nfiles;
    put32(out + 2, f->total);
    put32(out + 6, f->offset);
    put16(out + 10, f->len);
    memcpy(out + WIRE_FILE_HDR, f->data, f->len);
    return WIRE_FILE_HDR + f->len;
}

int wire_file_decode(const uint8_t *p, size_t n, wire_file *f)
{
    if (n < WIRE_FILE_HDR)
        return -1;
    f->file = p[0];
    f->nfiles = p[1];
    f->total = get32(p + 2);
    f->offset = get32(p + 6);
    f->len = get16(p + 10);
    f->data = p + WIRE_FILE_HDR;
    if (n != WIRE_FILE_HDR + (size_t)f->len || f->len > WIRE_CHUNK || f->nfiles == 0 ||
        f->nfiles > WIRE_FILES || f->file >= f->nfiles || f->total > WIRE_FILE_MAX ||
        f->offset > f->total || f->len > f->total - f->offset ||
        (f->len == 0 && f->total != 0))
        return -1;
    return 0;
}

int wire_key_decode(const uint8_t *p, size_t n, char *cred, size_t cap)
{
    if (n == 0 || n >= cap || n > WIRE_CRED_MAX)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x21 || p[i] > 0x7e)      /* MUNGE credentials are base64 between ':' */
            return -1;
    memcpy(cred, p, n);
    cred[n] = '\0';
    return 0;
}
