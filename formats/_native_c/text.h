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

int put_hex(gbuf *g, const uint8_t *p, Py_ssize_t n);                        /* lower-case, bytes.hex() */
int put_base64_of(gbuf *g, const uint8_t *p, Py_ssize_t n, const char *alphabet, int pad);
static inline int put_base64(gbuf *g, const uint8_t *p, Py_ssize_t n) { return put_base64_of(g, p, n, KL_B64, 1); }

/* strict UTF-8 as CPython's decoder accepts it (no surrogates, no overlongs, <= U+10FFFF): 1 valid */
int utf8_valid(const uint8_t *p, Py_ssize_t n);

/* the body (no quotes) of a JSON string of valid UTF-8 text */
int put_json_chars(gbuf *g, const uint8_t *p, Py_ssize_t n);
/* put_json_chars for text that turns out to be ASCII, in one pass: 1 written, 0 (nothing written) at the
 * first byte >= 0x80 (the caller validates the UTF-8 first), -1 error */
int put_json_ascii(gbuf *g, const uint8_t *p, Py_ssize_t n);
/* a quoted JSON string of valid UTF-8 text */
int put_json_string(gbuf *g, const uint8_t *p, Py_ssize_t n);

#endif
