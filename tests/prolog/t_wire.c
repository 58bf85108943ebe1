/* The agents' wire format: round trips of every payload, and every way a datagram is refused
 * (each counted under its reason, never decoded past the fixed header). */
#include <math.h>
#include <string.h>
#include "tap.h"
#include "wire.h"

static wire_keys K, OTHER;
static const uint32_t JOB = 4242;

static size_t build_round(uint8_t *buf, const wire_keys *k, uint32_t job, uint64_t seq)
{
    wire_round r = {.round = 7, .partner = 3, .partner_addr = 0x0100000a, .partner_port = 40000,
                    .timeout_us = 10000, .budget_us = 500000};
    ts_stop_rule_default(&r.rule);
    uint8_t pl[WIRE_ROUND_LEN];
    wire_round_encode(&r, pl);
    return wire_build(buf, k, WIRE_ROUND, job, WIRE_LEADER, seq, pl, sizeof pl);
}

int main(void)
{
    ok(wire_init() == 0, "libsodium initialises");
    uint8_t key[WIRE_KEY_BYTES], key2[WIRE_KEY_BYTES];
    memset(key, 0x11, sizeof key);
    memset(key2, 0x22, sizeof key2);
    wire_keys_derive(&K, key);
    wire_keys_derive(&OTHER, key2);
    ok(memcmp(K.mac, K.tag, sizeof K.mac) != 0, "the MAC and tag subkeys differ");

    /* a ROUND accepted, decoded identically, then refused as a replay */
    uint8_t buf[WIRE_MAX_DATAGRAM];
    wire_window win[9];
    memset(win, 0, sizeof win);
    wire_counters c;
    memset(&c, 0, sizeof c);
    wire_hdr h;
    size_t n = build_round(buf, &K, JOB, 1);
    is_int(n, WIRE_HEADER + WIRE_ROUND_LEN + WIRE_MAC, "ROUND: header + payload + 16-byte MAC");
    const uint8_t *p = wire_accept(buf, n, JOB, 8, &K, win, &h, &c);
    ok(p && h.type == WIRE_ROUND && h.sender == WIRE_LEADER && h.seq == 1, "a good ROUND is accepted");
    wire_round r;
    ok(p && wire_round_decode(p, h.length, &r) == 0 && r.round == 7 && r.partner == 3 &&
           r.partner_addr == 0x0100000a && r.partner_port == 40000 && r.rule.max_samples == 32 &&
           fabs(r.rule.eps - 0.03) < 1e-12 && r.budget_us == 500000,
       "ROUND decodes to what was encoded");
    ok(!wire_accept(buf, n, JOB, 8, &K, win, &h, &c) && c.drop[WIRE_DROP_REPLAY] == 1,
       "the same datagram again: dropped as a replay");

    /* every refusal, counted under its reason */
    struct { const char *what; int drop; } cases[] = {
        {"wrong key", WIRE_DROP_AUTH}, {"wrong job id", WIRE_DROP_JOB}, {"truncated", WIRE_DROP_LENGTH},
        {"oversized", WIRE_DROP_LENGTH}, {"shorter than a header", WIRE_DROP_SHORT},
        {"bad magic", WIRE_DROP_MAGIC}, {"other version", WIRE_DROP_VERSION},
        {"unknown type", WIRE_DROP_TYPE}, {"flags set", WIRE_DROP_FLAGS},
        {"sender outside the job", WIRE_DROP_SENDER}, {"tampered payload", WIRE_DROP_AUTH},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        uint8_t b[WIRE_MAX_DATAGRAM + 8];
        size_t m = build_round(b, k == 0 ? &OTHER : &K, k == 1 ? JOB + 1 : JOB, 100 + k);
        switch (k) {
        case 2: m -= 5; break;
        case 3: memset(b + m, 0, 8); m += 8; break;
        case 4: m = WIRE_HEADER - 1; break;
        case 5: b[0] ^= 0xff; break;
        case 6: b[4] = WIRE_VERSION + 1; break;
        case 7: b[5] = WIRE_TYPE_END; break;
        case 8: b[7] = 1; break;
        case 9: b[12] = 0; b[13] = 8; break;
        case 10: b[WIRE_HEADER + 3] ^= 1; break;
        }
        wire_counters cc;
        memset(&cc, 0, sizeof cc);
        ok(!wire_accept(b, m, JOB, 8, &K, win, &h, &cc) && cc.drop[cases[k].drop] == 1 &&
               wire_counters_dropped(&cc) == 1 && cc.accepted == 0,
           "%s: dropped and counted as '%s'", cases[k].what, wire_drop_name(cases[k].drop));
    }

    /* random bytes never pass */
    wire_counters rc;
    memset(&rc, 0, sizeof rc);
    uint32_t x = 12345;
    int accepted = 0;
    for (int t = 0; t < 20000; t++) {
        uint8_t b[256];
        size_t m = (size_t)(t % 256);
        for (size_t i = 0; i < m; i++) {
            x = x * 1103515245u + 12345u;
            b[i] = (uint8_t)(x >> 16);
        }
        if (t % 2) {                      /* half with a valid-looking header */
            uint8_t hb[WIRE_MAX_DATAGRAM];
            build_round(hb, &K, JOB, 1);
            memcpy(b, hb, m < WIRE_HEADER ? m : WIRE_HEADER);
        }
        accepted += wire_accept(b, m, JOB, 8, &K, win, &h, &rc) != NULL;
    }
    ok(accepted == 0 && wire_counters_dropped(&rc) == 20000, "20000 random datagrams: all dropped and counted");

    /* probes carry an 8-byte tag; a reply with the probe tag key but the control MAC does not */
    wire_probe pr = {.round = 1, .probe = 2, .t_send_ns = 123456789}, pr2;
    uint8_t pl[WIRE_PROBE_LEN];
    wire_probe_encode(&pr, pl);
    n = wire_build(buf, &K, WIRE_PROBE, JOB, 2, 5, pl, sizeof pl);
    is_int(n, WIRE_HEADER + WIRE_PROBE_LEN + WIRE_TAG, "PROBE: header + payload + 8-byte tag");
    p = wire_accept(buf, n, JOB, 8, &K, win, &h, &c);
    ok(p && wire_probe_decode(p, h.length, &pr2) == 0 && pr2.t_send_ns == 123456789, "PROBE round trip");
    buf[5] = WIRE_ROUND;                  /* a probe passed off as control: the MAC length differs */
    ok(!wire_accept(buf, n, JOB, 8, &K, win, &h, &c), "a probe relabelled as a control message is dropped");

    /* the replay window: out of order within 64 is fine, once */
    wire_window w = {0};
    ok(wire_window_accept(&w, 10) && wire_window_accept(&w, 5) && !wire_window_accept(&w, 5) &&
           wire_window_accept(&w, 80) && !wire_window_accept(&w, 10) && !wire_window_accept(&w, 0),
       "replay window: late but new accepted once, too old or repeated refused");

    /* RESULT */
    wire_result res = {.round = 9}, res2;
    res.st.samples = 32;
    res.st.lost = 1;
    res.st.flags = TS_PAIR_TIGHT;
    res.st.min_us = 800; res.st.median_us = 810; res.st.mad_us = 3; res.st.mean_us = 812;
    res.st.est_us = 811; res.st.ci_us = 4; res.st.time_us = 30000;
    uint8_t rp[WIRE_RESULT_LEN];
    wire_result_encode(&res, rp);
    ok(wire_result_decode(rp, sizeof rp, &res2) == 0 && res2.round == 9 && res2.st.samples == 32 &&
           res2.st.est_us == 811 && res2.st.flags == TS_PAIR_TIGHT, "RESULT round trip");
    rp[4] = 0xff;                         /* 65280 samples */
    ok(wire_result_decode(rp, sizeof rp, &res2) != 0, "RESULT with more samples than possible: refused");
    /* What the sampler makes of one answer and then max_lost losses in a row (a lossy link):
     * its half-width is unknown, +infinity. The leader must take it: refused, the worker's
     * resends of the same datagram were replays, and the round waited until the deadline. */
    ts_stop_rule one_rule;
    ts_stop_rule_default(&one_rule);
    one_rule.estimator = TS_ESTIMATE_MIN;
    one_rule.min_samples = one_rule.max_samples = 3;
    ts_sampler sm;
    ts_sampler_start(&sm, &one_rule);
    ts_sampler_add(&sm, 800);
    for (int i = 0; i < one_rule.max_lost; i++)
        ts_sampler_add_loss(&sm, 10000);
    wire_result one = {.round = 7};
    ts_sampler_finish(&sm, 2, 3, &one.st);
    wire_result_encode(&one, rp);
    ok(ts_sampler_done(&sm) && one.st.samples == 1 && isinf(one.st.ci_us) &&
           wire_result_decode(rp, sizeof rp, &res2) == 0 && res2.st.samples == 1 &&
           res2.st.min_us == 800 && isinf(res2.st.ci_us),
       "RESULT of one answer before losses in a row (half-width +inf): accepted");
    res.st.ci_us = INFINITY;
    wire_result_encode(&res, rp);
    ok(wire_result_decode(rp, sizeof rp, &res2) != 0,
       "RESULT of 32 samples with an infinite half-width: refused");
    res.st.ci_us = 4;
    res.st.min_us = NAN;
    wire_result_encode(&res, rp);
    ok(wire_result_decode(rp, sizeof rp, &res2) != 0,
       "RESULT with samples and a NaN minimum: refused");

    /* FILE chunks: bounds */
    const char *text = "SwitchName=s1 Nodes=node[1-8]\n";
    wire_file f = {.file = 1, .nfiles = 4, .total = (uint32_t)strlen(text), .offset = 0,
                   .len = (uint16_t)strlen(text), .data = (const uint8_t *)text}, f2;
    uint8_t fp[WIRE_FILE_HDR + WIRE_CHUNK];
    size_t fl = wire_file_encode(&f, fp);
    ok(wire_file_decode(fp, fl, &f2) == 0 && f2.len == f.len && memcmp(f2.data, text, f.len) == 0,
       "FILE round trip");
    fp[9] = 40;                           /* offset 40 + len 30 > total 30 */
    ok(wire_file_decode(fp, fl, &f2) != 0, "FILE chunk past the end of its file: refused");
    ok(wire_file_decode(fp, fl - 1, &f2) != 0, "FILE chunk shorter than it says: refused");

    char cred[WIRE_CRED_MAX + 1];
    ok(wire_key_decode((const uint8_t *)"MUNGE:AbC=:", 11, cred, sizeof cred) == 0 &&
           strcmp(cred, "MUNGE:AbC=:") == 0, "KEY: a credential's text is taken");
    ok(wire_key_decode((const uint8_t *)"MUNGE:\nx", 8, cred, sizeof cred) != 0,
       "KEY: control characters refused");
    return done_testing();
}
