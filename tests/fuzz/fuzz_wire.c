/* libFuzzer target: the agents' wire format (prolog/wire.c). Every input goes through the
 * whole acceptance path (header, authenticator, replay window) and, since a fuzzer cannot
 * forge a MAC, also straight into every payload decoder; decoded values must be in bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    static wire_keys keys;
    if (!ready) {
        if (wire_init() != 0)
            abort();
        uint8_t key[WIRE_KEY_BYTES] = {1, 2, 3};
        wire_keys_derive(&keys, key);
        ready = 1;
    }
    wire_window win[9];
    memset(win, 0, sizeof win);
    wire_counters c;
    memset(&c, 0, sizeof c);
    wire_hdr h;
    const uint8_t *p = wire_accept(data, size, 4242, 8, &keys, win, &h, &c);
    if (c.received != 1 || c.accepted + wire_counters_dropped(&c) != 1)
        abort();
    if (p && (p != data + WIRE_HEADER || WIRE_HEADER + (size_t)h.length > size))
        abort();

    wire_round r;
    if (wire_round_decode(data, size, &r) == 0 &&
        (r.rule.max_samples > TS_SAMPLES_MAX || r.rule.min_samples < 1 || r.timeout_us == 0))
        abort();
    wire_result res;
    if (wire_result_decode(data, size, &res) == 0 && res.st.samples > TS_SAMPLES_MAX)
        abort();
    wire_file f;
    if (wire_file_decode(data, size, &f) == 0 &&
        ((uint64_t)f.offset + f.len > f.total || f.file >= f.nfiles || f.data + f.len > data + size))
        abort();
    wire_probe pr;
    (void)wire_probe_decode(data, size, &pr);
    uint32_t v;
    (void)wire_u32_decode(data, size, &v);
    char cred[WIRE_CRED_MAX + 1];
    if (wire_key_decode(data, size, cred, sizeof cred) == 0 && strlen(cred) != size)
        abort();
    /* the replay window against arbitrary sequences: never accepts one twice */
    wire_window w = {0};
    for (size_t i = 0; i + 8 <= size && i < 512; i += 8) {
        uint64_t s;
        memcpy(&s, data + i, 8);
        s %= 200;
        if (wire_window_accept(&w, s) && wire_window_accept(&w, s))
            abort();
    }
    return 0;
}
