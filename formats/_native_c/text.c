/* Text writers shared by the coordinator decoder and dump-log's line writers (see text.h). */
#include "text.h"

const char KL_HEX[] = "0123456789abcdef";
const char KL_B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const char KL_B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

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
        while (i + 32 <= n) {                   /* ASCII runs (most keys and values): 32 bytes a step */
            uint64_t w[4];
            memcpy(w, p + i, 32);
            if ((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ull)
                break;
            i += 32;
        }
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
char KL_ESC_STR[256][8];
uint8_t KL_ESC_LEN[256];

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
        char *e = KL_ESC_STR[c];
        if (!ESCAPE[c]) {
            e[0] = (char)c;
            KL_ESC_LEN[c] = 1;
        } else if (ESCAPE[c] != 'u') {
            e[0] = '\\';
            e[1] = (char)ESCAPE[c];
            KL_ESC_LEN[c] = 2;
        } else {
            memcpy(e, "\\u00", 4);
            e[4] = KL_HEX[c >> 4];
            e[5] = KL_HEX[c & 15];
            KL_ESC_LEN[c] = 6;
        }
    }
}


int put_json_string(gbuf *g, const uint8_t *p, Py_ssize_t n) {
    if (PUT_LIT(g, "\"") < 0 || put_json_chars(g, p, n) < 0)
        return -1;
    return PUT_LIT(g, "\"");
}
