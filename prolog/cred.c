/* toposcope agents — MUNGE carries the session key from the leader to the workers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <munge.h>
#include "cred.h"

static char *munge_encode_key(void *ctx, const uint8_t *payload, size_t len, char *why, size_t whylen)
{
    uid_t uid = *(uid_t *)ctx;
    munge_ctx_t m = munge_ctx_create();
    if (!m) {
        snprintf(why, whylen, "munge: cannot create a context (out of memory)");
        return NULL;
    }
    char *cred = NULL;
    munge_err_t e = munge_ctx_set(m, MUNGE_OPT_UID_RESTRICTION, uid);
    if (e == EMUNGE_SUCCESS)
        e = munge_encode(&cred, m, payload, (int)len);
    if (e != EMUNGE_SUCCESS) {
        const char *msg = munge_ctx_strerror(m);
        snprintf(why, whylen, "munge_encode: %s (is munged running? try: munge -n | unmunge)",
                 msg ? msg : munge_strerror(e));
        free(cred);
        cred = NULL;
    }
    munge_ctx_destroy(m);
    return cred;
}

static int munge_decode_key(void *ctx, const char *cred, uint8_t *payload, size_t *len, uid_t *uid,
                            char *why, size_t whylen)
{
    (void)ctx;
    void *data = NULL;
    int dlen = 0;
    gid_t gid;
    munge_err_t e = munge_decode(cred, NULL, &data, &dlen, uid, &gid);
    if (e != EMUNGE_SUCCESS) {
        snprintf(why, whylen, "munge_decode: %s", munge_strerror(e));
        if (data)
            free(data);
        return -1;
    }
    if (dlen < 0 || (size_t)dlen > *len) {
        snprintf(why, whylen, "the credential carries %d bytes, more than a key", dlen);
        free(data);
        return -1;
    }
    memcpy(payload, data, (size_t)dlen);
    *len = (size_t)dlen;
    memset(data, 0, (size_t)dlen);
    free(data);
    return 0;
}

void cred_munge_keyx(agent_keyx *k, uid_t uid)
{
    /* the uid lives in the struct itself: no global state, and it outlives every call */
    k->expect_uid = uid;
    k->encode = munge_encode_key;
    k->decode = munge_decode_key;
    k->ctx = &k->expect_uid;
}
