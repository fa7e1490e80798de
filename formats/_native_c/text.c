/* Text writers shared by the coordinator decoder and dump-log's line writers (see text.h). */
#include "text.h"

const char KL_HEX[] = "0123456789abcdef";
const char KL_B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const char KL_B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int put_hex(gbuf *g, const uint8_t *p, Py_ssize_t n) {
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

int put_base64_of(gbuf *g, const uint8_t *p, Py_ssize_t n, const char *alphabet, int pad) {
    if (gbuf_reserve(g, (n + 2) / 3 * 4) < 0)
        return -1;
    char *o = gbuf_ptr(g) + g->len, *o0 = o;
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        *o++ = alphabet[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        if (pad) {
            *o++ = '=';
            *o++ = '=';
        }
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8);
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        if (pad)
            *o++ = '=';
    }
    g->len += o - o0;
    return 0;
}

int utf8_valid(const uint8_t *p, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (p[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n)
                return 0;
            uint8_t c1 = p[i + 1];
            if (c == 0xE0 ? (c1 < 0xA0 || c1 > 0xBF) : c == 0xED ? (c1 < 0x80 || c1 > 0x9F) : (c1 & 0xC0) != 0x80)
                return 0;
            if ((p[i + 2] & 0xC0) != 0x80)
                return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n)
                return 0;
            uint8_t c1 = p[i + 1];
            if (c == 0xF0 ? (c1 < 0x90 || c1 > 0xBF) : c == 0xF4 ? (c1 < 0x80 || c1 > 0x8F) : (c1 & 0xC0) != 0x80)
                return 0;
            if ((p[i + 2] & 0xC0) != 0x80 || (p[i + 3] & 0xC0) != 0x80)
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* the JSON escapes of text.h's rule, one entry a byte */
static uint8_t ESCAPE[256];      /* 0 copy, else the letter after the backslash ('u' for \u00XX) */
static char ESC_STR[256][8];     /* what each byte becomes, and its length */
static uint8_t ESC_LEN[256];

void kl_text_init(void) {
    for (int c = 0; c < 0x20; c++)
        ESCAPE[c] = 'u';
    ESCAPE['"'] = '"';
    ESCAPE['\\'] = '\\';
    ESCAPE['\b'] = 'b';
    ESCAPE['\t'] = 't';
    ESCAPE['\n'] = 'n';
    ESCAPE['\f'] = 'f';
    ESCAPE['\r'] = 'r';
    for (int c = 0; c < 256; c++) {
        char *e = ESC_STR[c];
        if (!ESCAPE[c]) {
            e[0] = (char)c;
            ESC_LEN[c] = 1;
        } else if (ESCAPE[c] != 'u') {
            e[0] = '\\';
            e[1] = (char)ESCAPE[c];
            ESC_LEN[c] = 2;
        } else {
            memcpy(e, "\\u00", 4);
            e[4] = KL_HEX[c >> 4];
            e[5] = KL_HEX[c & 15];
            ESC_LEN[c] = 6;
        }
    }
}

static inline int plain8(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t lt20 = (w - ones * 0x20) & ~w & highs;                 /* a byte < 0x20 */
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    uint64_t eq = ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs);
    return !(lt20 | eq);
}

int put_json_chars(gbuf *g, const uint8_t *p, Py_ssize_t n) {
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
                memcpy(o, ESC_STR[c], 8);
                o += ESC_LEN[c];
            }
        }
        i += 8;
    }
    for (; i < n; i++) {
        uint8_t c = p[i];
        memcpy(o, ESC_STR[c], 8);
        o += ESC_LEN[c];
    }
    g->len += o - o0;
    return 0;
}

int put_json_ascii(gbuf *g, const uint8_t *p, Py_ssize_t n) {
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
                memcpy(o, ESC_STR[c], 8);
                o += ESC_LEN[c];
            }
        }
        i += 8;
    }
    for (; i < n; i++) {
        uint8_t c = p[i];
        if (c >= 0x80)
            return 0;
        memcpy(o, ESC_STR[c], 8);
        o += ESC_LEN[c];
    }
    g->len += o - o0;
    return 1;
}


int put_json_string(gbuf *g, const uint8_t *p, Py_ssize_t n) {
    if (PUT_LIT(g, "\"") < 0 || put_json_chars(g, p, n) < 0)
        return -1;
    return PUT_LIT(g, "\"");
}
