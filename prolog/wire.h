/* toposcope agents — the wire format between node agents.
 *
 * Every datagram starts with one fixed 24-byte header (network byte order):
 *
 *   0  magic   u32  "TSCP"
 *   4  version u8   WIRE_VERSION
 *   5  type    u8   wire_type
 *   6  flags   u16  0 (reserved; anything else is refused)
 *   8  job     u32  Slurm job id (step mode: a hash of the job and step ids)
 *  12  sender  u16  the sender's index in the hostlist, WIRE_LEADER for the leader's coordinator
 *  14  length  u16  payload bytes after the header
 *  16  seq     u64  per sender, strictly increasing (replay window)
 *
 * followed by `length` payload bytes and an authenticator: a 16-byte MAC (keyed BLAKE2b over
 * header and payload) on control messages, an 8-byte tag on probes (the same with a separate
 * subkey, short because a probe's round trip is what we time), nothing on HELLO and KEY, which
 * run before the key is known (KEY carries a MUNGE credential that authenticates itself).
 * The datagram's size must be exactly header + length + authenticator.
 *
 * The parser takes untrusted input: wire_check_header() looks at the fixed header only, and
 * no payload is decoded before the authenticator and the replay window have accepted it.
 * Every refusal is counted by reason. No Slurm or MUNGE headers here, so it fuzzes alone. */
#ifndef TOPOSCOPE_WIRE_H
#define TOPOSCOPE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "toposcope/probe.h"

#define WIRE_MAGIC 0x54534350u       /* "TSCP" */
#define WIRE_VERSION 1
#define WIRE_HEADER 24
#define WIRE_MAC 16
#define WIRE_TAG 8
#define WIRE_MAX_DATAGRAM 1400        /* stays under a 1500-byte MTU with IP and UDP headers */
#define WIRE_MAX_PAYLOAD (WIRE_MAX_DATAGRAM - WIRE_HEADER - WIRE_MAC)
#define WIRE_LEADER 0xfffeu           /* sender index of the leader's coordinator */
#define WIRE_MAX_NODES 4096
#define WIRE_KEY_BYTES 32
#define WIRE_CRED_MAX 1024            /* a MUNGE credential carrying a key fits easily */
#define WIRE_CHUNK 1024               /* file bytes per FILE datagram */

typedef enum wire_type {
    WIRE_HELLO = 1,      /* worker -> leader: "I am node `sender`", no payload, no MAC */
    WIRE_KEY,            /* leader -> worker: MUNGE credential with the session key, no MAC */
    WIRE_JOIN,           /* worker -> leader: MAC'd, proves the worker holds the key */
    WIRE_ROUND,          /* leader -> initiator: sample a pair */
    WIRE_ROUND_ACK,      /* initiator -> leader: got it, sampling */
    WIRE_RESULT,         /* initiator -> leader: the pair's statistics */
    WIRE_SYNC,           /* leader -> worker: control step */
    WIRE_SYNC_ACK,       /* worker -> leader */
    WIRE_FILE,           /* leader -> worker: a chunk of a result file */
    WIRE_DONE,           /* worker -> leader: every file written */
    WIRE_PROBE,          /* initiator -> responder: tagged */
    WIRE_PROBE_REPLY,    /* responder -> initiator: tagged, echoes the payload */
    WIRE_TYPE_END
} wire_type;

/* Why a datagram was dropped; counted in wire_counters.drop[]. */
typedef enum wire_drop {
    WIRE_DROP_SHORT = 0,     /* shorter than the header */
    WIRE_DROP_MAGIC,
    WIRE_DROP_VERSION,
    WIRE_DROP_TYPE,
    WIRE_DROP_FLAGS,
    WIRE_DROP_JOB,           /* another job's datagram */
    WIRE_DROP_LENGTH,        /* size != header + length + authenticator, or oversized */
    WIRE_DROP_SENDER,        /* sender index outside the job */
    WIRE_DROP_AUTH,          /* MAC or tag wrong (wrong key, tampered) */
    WIRE_DROP_REPLAY,        /* sequence number seen before or too old */
    WIRE_DROP_PAYLOAD,       /* authenticated, but the payload does not decode */
    WIRE_DROP_UNEXPECTED,    /* a valid message this role or state has no use for */
    WIRE_DROP_ADDRESS,       /* from an address that may not send it (KEY not from the leader's
                              * ports, HELLO or JOIN not from the node's own address) */
    WIRE_DROP_RATE,          /* unauthenticated work past its rate (credential decodes) */
    WIRE_DROP_END
} wire_drop;

const char *wire_drop_name(wire_drop d);

typedef struct wire_counters {
    uint64_t received, accepted;
    uint64_t drop[WIRE_DROP_END];
} wire_counters;

uint64_t wire_counters_dropped(const wire_counters *c);

typedef struct wire_hdr {
    uint8_t type;
    uint32_t job;
    uint16_t sender;
    uint16_t length;
    uint64_t seq;
} wire_hdr;

/* Keys derived from the session key: one for MACs, one for probe tags. */
typedef struct wire_keys {
    uint8_t mac[32];
    uint8_t tag[32];
} wire_keys;

int wire_init(void);   /* libsodium; 0 on success */
void wire_keys_derive(wire_keys *k, const uint8_t session_key[WIRE_KEY_BYTES]);

/* Authenticator bytes for a message type. */
size_t wire_auth_len(int type);

/* Build a datagram into buf (WIRE_MAX_DATAGRAM bytes): returns its size, 0 when the payload is
 * too long. keys may be NULL only for HELLO and KEY. */
size_t wire_build(uint8_t *buf, const wire_keys *k, int type, uint32_t job, uint16_t sender,
                  uint64_t seq, const void *payload, size_t len);

/* Fixed header checks only (magic, version, type, flags, job, exact size, sender < nsenders or
 * WIRE_LEADER): 0 and *h filled, or the drop reason counted and -1. */
int wire_check_header(const uint8_t *buf, size_t n, uint32_t job, int nsenders, wire_hdr *h,
                      wire_counters *c);
/* The authenticator of a datagram that passed wire_check_header (HELLO and KEY pass). */
int wire_check_auth(const uint8_t *buf, size_t n, const wire_hdr *h, const wire_keys *k,
                    wire_counters *c);

/* Anti-replay window per sender (the last 64 sequence numbers), as in IPsec. */
typedef struct wire_window {
    uint64_t top;          /* highest accepted sequence number, 0 = none yet */
    uint64_t bits;         /* bit i: top - i accepted */
} wire_window;

int wire_window_accept(wire_window *w, uint64_t seq);   /* 1 accepted (and recorded), 0 replay */

/* Everything above in order: header, authenticator, replay window (windows[nsenders] is the
 * leader's). Returns the payload pointer, or NULL with the reason counted. */
const uint8_t *wire_accept(const uint8_t *buf, size_t n, uint32_t job, int nsenders,
                           const wire_keys *k, wire_window *windows, wire_hdr *h,
                           wire_counters *c);

/* ---- payloads (fixed layouts; decoders validate every field) ---- */

typedef struct wire_round {
    uint32_t round;
    uint16_t partner;            /* responder's index */
    uint32_t partner_addr;       /* IPv4, network order */
    uint16_t partner_port;       /* host order */
    ts_stop_rule rule;
    uint32_t timeout_us;         /* a probe unanswered this long is lost */
    uint32_t budget_us;          /* the pair's time from receipt */
} wire_round;

#define WIRE_ROUND_LEN 42
size_t wire_round_encode(const wire_round *r, uint8_t *out);
int wire_round_decode(const uint8_t *p, size_t n, wire_round *r);

typedef struct wire_result {
    uint32_t round;
    ts_pair_stats st;            /* a, b are filled from the round by the leader */
} wire_result;

#define WIRE_RESULT_LEN 68
size_t wire_result_encode(const wire_result *r, uint8_t *out);
int wire_result_decode(const uint8_t *p, size_t n, wire_result *r);

/* ROUND_ACK, SYNC, SYNC_ACK, DONE: a 32-bit round / step number. */
#define WIRE_U32_LEN 4
size_t wire_u32_encode(uint32_t v, uint8_t *out);
int wire_u32_decode(const uint8_t *p, size_t n, uint32_t *v);

typedef struct wire_probe {
    uint32_t round;
    uint32_t probe;
    uint64_t t_send_ns;          /* the initiator's clock, echoed */
} wire_probe;

#define WIRE_PROBE_LEN 16
size_t wire_probe_encode(const wire_probe *p, uint8_t *out);
int wire_probe_decode(const uint8_t *p, size_t n, wire_probe *out);

/* FILE: one chunk of one of up to WIRE_FILES files. */
#define WIRE_FILES 4
#define WIRE_FILE_MAX (1u << 20)     /* a result file larger than this is refused */
typedef struct wire_file {
    uint8_t file;                /* 0 .. nfiles-1 */
    uint8_t nfiles;
    uint32_t total;              /* the file's size */
    uint32_t offset;
    uint16_t len;
    const uint8_t *data;         /* points into the datagram */
} wire_file;

#define WIRE_FILE_HDR 12
size_t wire_file_encode(const wire_file *f, uint8_t *out);   /* header + data */
int wire_file_decode(const uint8_t *p, size_t n, wire_file *f);

/* KEY: the credential text (printable, no NUL). */
int wire_key_decode(const uint8_t *p, size_t n, char *cred, size_t cap);

#endif
