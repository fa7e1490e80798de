/* Text writers shared by the compiled JSON and text producers: the coordinator decoder of the format layer
 * (coordinator.c) and dump-log's line writers of the render layer (kafkalog_cli/render/_native_c/render.c).
 * One source (text.c), compiled into each extension that writes text; every writer appends to a gbuf.
 *
 * The JSON string rule is orjson's and json.dumps(ensure_ascii=False)'s alike: \" \\ \b \t \n \f \r, other
 * bytes below 0x20 as \u00XX (lower-case hex), everything else (valid UTF-8) as it is.
 */
#ifndef KAFKALOG_TEXT_H
#define KAFKALOG_TEXT_H

#include "native.h"

#define PUT_LIT(g, s) gbuf_put((g), (s), (Py_ssize_t)(sizeof(s) - 1))

extern const char KL_HEX[];            /* "0123456789abcdef" */
extern const char KL_B64[];            /* RFC 4648 base64 */
extern const char KL_B64URL[];         /* RFC 4648 base64url */

void kl_text_init(void);               /* the JSON escape tables; called by each module's init */
extern char KL_ESC_STR[256][8];        /* what each byte becomes in a JSON string (padded to 8 bytes) */
extern uint8_t KL_ESC_LEN[256];        /* and its length */

/* decimal, as Python's str(int) */
static const char KL_DIGITS2[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline int kl_digits10(uint64_t u) {
    int d = 1;
    while (u >= 10000) {
        u /= 10000;
        d += 4;
    }
    return d + (u >= 10) + (u >= 100) + (u >= 1000);
}

static inline int put_i64(gbuf *g, int64_t v) {
    if (gbuf_reserve(g, 20) < 0)
        return -1;
    char *o = gbuf_ptr(g) + g->len;
    uint64_t u = v < 0 ? 0ull - (uint64_t)v : (uint64_t)v;
    int neg = v < 0, n = kl_digits10(u);
    if (neg)
        *o++ = '-';
    char *p = o + n;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--p = KL_DIGITS2[d + 1];
        *--p = KL_DIGITS2[d];
    }
    if (u >= 10) {
        unsigned d = (unsigned)u * 2;
        *--p = KL_DIGITS2[d + 1];
        *--p = KL_DIGITS2[d];
    } else {
        *--p = (char)('0' + u);
    }
    g->len += n + neg;
    return 0;
}

int put_base64_of(gbuf *g, const uint8_t *p, Py_ssize_t n, const char *alphabet, int pad);
static inline int put_base64(gbuf *g, const uint8_t *p, Py_ssize_t n) { return put_base64_of(g, p, n, KL_B64, 1); }

/* strict UTF-8 as CPython's decoder accepts it (no surrogates, no overlongs, <= U+10FFFF): 1 valid */
int utf8_valid(const uint8_t *p, Py_ssize_t n);

/* The hot writers are inline: each line writer compiles them into its own loop (a call per field cost
 * dump-log's JSON lines up to 4% more instructions). */

/* lower-case hex, bytes.hex() */
static inline int put_hex(gbuf *g, const uint8_t *p, Py_ssize_t n) {
    if (gbuf_reserve(g, 2 * n) < 0)
        return -1;
    char *o = gbuf_ptr(g) + g->len;
    for (Py_ssize_t i = 0; i < n; i++) {
        o[2 * i] = KL_HEX[p[i] >> 4];
        o[2 * i + 1] = KL_HEX[p[i] & 15];
    }
    g->len += 2 * n;
    return 0;
}


static inline int plain8(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t lt20 = (w - ones * 0x20) & ~w & highs;                 /* a byte < 0x20 */
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    uint64_t eq = ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs);
    return !(lt20 | eq);
}

/* the body (no quotes) of a JSON string of valid UTF-8 text */
static inline int put_json_chars(gbuf *g, const uint8_t *p, Py_ssize_t n) {
    if (n > (PY_SSIZE_T_MAX - g->len - 8) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    if (gbuf_reserve(g, 6 * n + 8) < 0)         /* 8: each byte is stored as 8 (its length counts) */
        return -1;
    char *o = gbuf_ptr(g) + g->len, *o0 = o;
    Py_ssize_t i = 0;
    while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (plain8(w)) {
            memcpy(o, &w, 8);
            o += 8;
        } else {
            for (int k = 0; k < 8; k++) {
                uint8_t c = p[i + k];
                memcpy(o, KL_ESC_STR[c], 8);
                o += KL_ESC_LEN[c];
            }
        }
        i += 8;
    }
    for (; i < n; i++) {
        uint8_t c = p[i];
        memcpy(o, KL_ESC_STR[c], 8);
        o += KL_ESC_LEN[c];
    }
    g->len += o - o0;
    return 0;
}

/* put_json_chars for text that turns out to be ASCII, in one pass: 1 written, 0 (nothing written) at the
 * first byte >= 0x80 (the caller validates the UTF-8 first), -1 error */
static inline int put_json_ascii(gbuf *g, const uint8_t *p, Py_ssize_t n) {
    if (n > (PY_SSIZE_T_MAX - g->len - 8) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    if (gbuf_reserve(g, 6 * n + 8) < 0)
        return -1;
    char *o = gbuf_ptr(g) + g->len, *o0 = o;
    Py_ssize_t i = 0;
    while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ull)
            return 0;
        if (plain8(w)) {
            memcpy(o, &w, 8);
            o += 8;
        } else {
            for (int k = 0; k < 8; k++) {
                uint8_t c = p[i + k];
                memcpy(o, KL_ESC_STR[c], 8);
                o += KL_ESC_LEN[c];
            }
        }
        i += 8;
    }
    for (; i < n; i++) {
        uint8_t c = p[i];
        if (c >= 0x80)
            return 0;
        memcpy(o, KL_ESC_STR[c], 8);
        o += KL_ESC_LEN[c];
    }
    g->len += o - o0;
    return 1;
}


/* a quoted JSON string of valid UTF-8 text */
int put_json_string(gbuf *g, const uint8_t *p, Py_ssize_t n);

#endif
