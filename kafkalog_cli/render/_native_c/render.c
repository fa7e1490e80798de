/* kafkalog_cli.render._native_render: dump-log's lines written straight from the columns of a scan
 * (kafkalog_formats.columns, filled by the format layer's kafkalog_formats._native) into an output bytearray
 * or a file descriptor. The Python seam is kafkalog_cli/render/native_lines.py, which decides when these
 * writers run; the pure renderers are the reference.
 *
 * render_text: kafkalog_cli.render.kafka_text (batch_line, TextRenderer.record_line) for v2 batches that
 * are not control batches, key/value decoders string (also json: the text form is the same), hex,
 * base64, none. render_json: kafkalog_cli.render.jsonl (batch_object, JsonRenderer.record_object) encoded
 * as orjson encodes those dicts (compact, keys in insertion order, UTF-8 kept, control characters
 * escaped as \b \t \n \f \r or \u00XX: formats/_native_c/text.c), then DEL, C1 and invisible characters as
 * \uHHHH as names.json_text writes them (escape_shown), decoders string, hex, base64, none. The
 * output is UTF-8 and equal byte for byte to what the pure renderers write (tests/test_native_parity.py);
 * invalid UTF-8 where the pure renderer decodes with errors="replace" is decoded by CPython's own codec for
 * that field.
 *
 * Built from this file and the format layer's shared sources (records.c: gbuf; crc32c.c; text.c), see
 * setup.py.
 */
#include "text.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

enum { DEC_STRING = 0, DEC_HEX = 1, DEC_BASE64 = 2, DEC_NONE = 3, DEC_JSON_TEXT = 4 };

/* --- where lines go: appended to a bytearray, or written to a file descriptor in 1 MiB chunks ------- */
#define FLUSH_AT (1 << 20)

typedef struct {
    gbuf g;
    int fd;                      /* -1: the bytearray itself is the output */
    int json;                    /* JSON lines: escape_shown before the bytes leave */
    Py_ssize_t start;            /* where this call's bytes begin in the bytearray */
} sink_t;

static int sink_open(sink_t *s, PyObject *out, int json) {
    s->fd = -1;
    s->json = json;
    s->start = 0;
    if (PyByteArray_Check(out)) {
        s->start = PyByteArray_GET_SIZE(out);
        return gbuf_init(&s->g, out, 0);
    }
    long fd = PyLong_AsLong(out);
    if (fd == -1 && PyErr_Occurred())
        return -1;
    if (fd < 0 || fd > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "out must be a bytearray or a file descriptor");
        return -1;
    }
    s->fd = (int)fd;
    return gbuf_init(&s->g, NULL, FLUSH_AT + (1 << 16));
}

static int write_all(int fd, const char *p, Py_ssize_t n) {
    while (n > 0) {
        ssize_t w;
        Py_BEGIN_ALLOW_THREADS
        w = write(fd, p, (size_t)n);
        Py_END_ALLOW_THREADS
        if (w < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0)
                    return -1;
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {   /* a non-blocking stdout: wait until writable */
                struct pollfd pfd = {fd, POLLOUT, 0};
                Py_BEGIN_ALLOW_THREADS
                poll(&pfd, 1, -1);
                Py_END_ALLOW_THREADS
                continue;
            }
            PyErr_SetFromErrno(PyExc_OSError);             /* EPIPE: BrokenPipeError, as print() gives */
            return -1;
        }
        p += w;
        n -= w;
    }
    return 0;
}

/* names.json_text in C: DEL, the C1 control characters and the invisible format characters (U+00AD,
 * U+061C, U+180E, U+200B-U+200F, U+202A-U+202E, U+2060-U+2069, U+FEFF, U+FFF9-U+FFFB) as \uHHHH in the
 * bytes [from, len) of JSON lines: JSON leaves them raw and a terminal acts on them (issue 34). The bytes
 * are valid UTF-8 (put_json_chars' input is validated, everything else is ASCII), and such a character can
 * only stand inside a JSON string, so rewriting each wherever it is is exact. shown_char: how many bytes
 * the character at p takes when it is one of them (its code point in *cp), else 0. */
static inline int shown_char(const unsigned char *p, const unsigned char *end, unsigned *cp) {
    unsigned c = p[0];
    if (c == 0x7f) {
        *cp = c;
        return 1;
    }
    if (c == 0xc2 || c == 0xd8) {
        if (end - p < 2)
            return 0;
        *cp = ((c & 0x1f) << 6) | (p[1] & 0x3f);
        return (*cp <= 0x9f || *cp == 0xad || *cp == 0x61c) ? 2 : 0;
    }
    if (c == 0xe1 || c == 0xe2 || c == 0xef) {
        if (end - p < 3)
            return 0;
        unsigned u = ((c & 0x0f) << 12) | ((p[1] & 0x3f) << 6) | (p[2] & 0x3f);
        *cp = u;
        return (u == 0x180e || (u >= 0x200b && u <= 0x200f) || (u >= 0x202a && u <= 0x202e) ||
                (u >= 0x2060 && u <= 0x2069) || u == 0xfeff || (u >= 0xfff9 && u <= 0xfffb)) ? 3 : 0;
    }
    return 0;
}

static int escape_shown(gbuf *g, Py_ssize_t from) {
    const unsigned char *b = (const unsigned char *)gbuf_ptr(g), *end = b + g->len;
    const unsigned char *p = b + from;
    Py_ssize_t grow = 0;
    unsigned cp;
    while (p < end) {                        /* count; 8 bytes below 0x7f at a time */
        if (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            if (!((w | (w + 0x0101010101010101ull)) & 0x8080808080808080ull)) {
                p += 8;
                continue;
            }
        }
        int n = *p >= 0x7f ? shown_char(p, end, &cp) : 0;
        grow += n ? 6 - n : 0;
        p += n ? n : 1;
    }
    if (!grow)
        return 0;
    Py_ssize_t len = g->len;
    if (gbuf_reserve(g, grow) < 0)
        return -1;
    char *o = gbuf_ptr(g);
    memmove(o + from + grow, o + from, (size_t)(len - from));   /* then rewritten forwards: never overtakes */
    const unsigned char *r = (const unsigned char *)o + from + grow, *rend = (const unsigned char *)o + len + grow;
    char *w = o + from;
    while (r < rend) {
        int n = *r >= 0x7f ? shown_char(r, rend, &cp) : 0;
        if (!n) {
            *w++ = (char)*r++;
            continue;
        }
        w[0] = '\\';
        w[1] = 'u';
        w[2] = KL_HEX[(cp >> 12) & 15];
        w[3] = KL_HEX[(cp >> 8) & 15];
        w[4] = KL_HEX[(cp >> 4) & 15];
        w[5] = KL_HEX[cp & 15];
        w += 6;
        r += n;
    }
    g->len = len + grow;
    return 0;
}

static int sink_flush(sink_t *s) {
    if (s->fd < 0 || !s->g.len)
        return 0;
    if (s->json && escape_shown(&s->g, 0) < 0)
        return -1;
    int rc = write_all(s->fd, gbuf_ptr(&s->g), s->g.len);
    s->g.len = 0;
    return rc;
}

/* written out once FLUSH_AT bytes are waiting: after a line, or inside one (a record's headers) */
static inline int sink_line(sink_t *s) { return s->fd >= 0 && s->g.len >= FLUSH_AT ? sink_flush(s) : 0; }

static int sink_close(sink_t *s, int ok) {
    int rc = 0;
    if (s->fd >= 0) {
        if (ok)
            rc = sink_flush(s);
    } else if (s->g.ba && ((ok && s->json && escape_shown(&s->g, s->start) < 0) ||
                           PyByteArray_Resize(s->g.ba, s->g.len) < 0)) {
        rc = -1;
    }
    gbuf_clear(&s->g);
    return rc;
}

/* --- small writers ---------------------------------------------------------------------------------- */
static int put_bool(gbuf *g, int v) { return v ? PUT_LIT(g, "true") : PUT_LIT(g, "false"); }

/* bytes.decode("utf-8", errors="replace") re-encoded: CPython's codec decides the replacements */
static int put_utf8_replaced(gbuf *g, const uint8_t *p, Py_ssize_t n, int json) {
    PyObject *s = PyUnicode_DecodeUTF8((const char *)p, n, "replace");
    if (!s)
        return -1;
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(s, &len);
    int rc = u ? (json ? put_json_chars(g, (const uint8_t *)u, len) : gbuf_put(g, u, len)) : -1;
    Py_DECREF(s);
    return rc;
}

/* Invalid UTF-8 as Java's new String(bytes, UTF_8) replaces it, U+FFFD as EF BF BD (java_text.java_utf8:
 * an encoded surrogate is one replacement, a sequence cut short by the end one for the rest of the input) */
static const char REPL[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

static int cont(uint8_t b) { return (b & 0xC0) == 0x80; }

static int put_java_utf8(gbuf *g, const uint8_t *p, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t b1 = p[i];
        Py_ssize_t take = 1;     /* bytes consumed */
        int ok = 0;              /* copy them as they are (valid), else one replacement */
        if (b1 < 0x80) {
            ok = 1;
        } else if (b1 >= 0xC2 && b1 <= 0xDF) {
            if (i + 1 >= n)
                take = n - i;
            else if (cont(p[i + 1]))
                take = 2, ok = 1;
        } else if (b1 >= 0xE0 && b1 <= 0xEF) {
            if (i + 2 < n) {
                uint8_t b2 = p[i + 1], b3 = p[i + 2];
                if ((b1 == 0xE0 && (b2 & 0xE0) == 0x80) || !cont(b2))
                    take = 1;
                else if (!cont(b3))
                    take = 2;
                else
                    take = 3, ok = !(b1 == 0xED && b2 >= 0xA0);     /* a surrogate: one replacement */
            } else if (i + 1 < n && ((b1 == 0xE0 && (p[i + 1] & 0xE0) == 0x80) || !cont(p[i + 1]))) {
                take = 1;
            } else {
                take = n - i;
            }
        } else if (b1 >= 0xF0 && b1 <= 0xF7) {
            #define BAD2(b2) (b1 > 0xF4 || (b1 == 0xF0 && ((b2) < 0x90 || (b2) > 0xBF)) || \
                              (b1 == 0xF4 && ((b2) & 0xF0) != 0x80) || !cont(b2))
            if (i + 3 < n) {
                uint8_t b2 = p[i + 1], b3 = p[i + 2], b4 = p[i + 3];
                uint32_t cp = (uint32_t)(b1 & 7) << 18 | (uint32_t)(b2 & 0x3F) << 12 | (uint32_t)(b3 & 0x3F) << 6 | (b4 & 0x3F);
                if (cont(b2) && cont(b3) && cont(b4) && cp >= 0x10000 && cp <= 0x10FFFF)
                    take = 4, ok = 1;
                else
                    take = BAD2(b2) ? 1 : !cont(b3) ? 2 : 3;
            } else if (b1 > 0xF4 || (i + 1 < n && BAD2(p[i + 1]))) {
                take = 1;
            } else {
                take = (i + 2 < n && !cont(p[i + 2])) ? 2 : n - i;
            }
            #undef BAD2
        }
        if (ok ? gbuf_put(g, (const char *)p + i, take) < 0 : gbuf_put(g, REPL, 3) < 0)
            return -1;
        i += take;
    }
    return 0;
}

/* text of a key/value with a payload decoder (payload.to_text) */
static int put_text(gbuf *g, int dec, const uint8_t *p, Py_ssize_t n) {
    switch (dec) {
    case DEC_HEX:
        return put_hex(g, p, n);
    case DEC_BASE64:
        return put_base64(g, p, n);
    default:
        return utf8_valid(p, n) ? gbuf_put(g, p, n) : put_java_utf8(g, p, n);
    }
}

/* "name":value[,"name_encoding":"base64"] of payload.to_json (string, hex, base64); leading comma */
static int put_json_data(gbuf *g, const char *name, Py_ssize_t name_len, int dec, const uint8_t *p, Py_ssize_t n) {
    if (dec == DEC_NONE)
        return 0;
    if (PUT_LIT(g, ",\"") < 0 || gbuf_put(g, name, name_len) < 0 || PUT_LIT(g, "\":") < 0)
        return -1;
    if (p == NULL)
        return PUT_LIT(g, "null");
    if (PUT_LIT(g, "\"") < 0)
        return -1;
    int b64 = 0;
    if (dec == DEC_HEX) {
        if (put_hex(g, p, n) < 0)
            return -1;
    } else if (dec == DEC_BASE64) {
        if (put_base64(g, p, n) < 0)
            return -1;
    } else if ((b64 = put_json_ascii(g, p, n)) != 0) {
        if (b64 < 0)
            return -1;
        b64 = 0;
    } else if (utf8_valid(p, n)) {
        if (put_json_chars(g, p, n) < 0)
            return -1;
    } else {
        if (put_base64(g, p, n) < 0)
            return -1;
        b64 = 1;
    }
    if (PUT_LIT(g, "\"") < 0)
        return -1;
    if (b64 && (PUT_LIT(g, ",\"") < 0 || gbuf_put(g, name, name_len) < 0 || PUT_LIT(g, "_encoding\":\"base64\"") < 0))
        return -1;
    return 0;
}

/* --- shared argument handling ---------------------------------------------------------------------- */
typedef struct {
    Py_buffer b, r, h;
    const int64_t *batches, *rows, *hdrs;
    Py_ssize_t nb;
    PyObject *sources;
    Py_ssize_t nsrc;
    Py_buffer *srcv;
} cols_t;

static void cols_release(cols_t *c) {
    if (c->b.obj)
        PyBuffer_Release(&c->b);
    if (c->r.obj)
        PyBuffer_Release(&c->r);
    if (c->h.obj)
        PyBuffer_Release(&c->h);
    if (c->srcv) {
        for (Py_ssize_t i = 0; i < c->nsrc; i++)
            if (c->srcv[i].obj)
                PyBuffer_Release(&c->srcv[i]);
        PyMem_Free(c->srcv);
    }
}

/* [pos, pos + len) inside [0, limit), without overflow */
static inline int span_ok(int64_t pos, int64_t len, int64_t limit) {
    return pos >= 0 && len >= 0 && pos <= limit && len <= limit - pos;
}

static inline int is_i32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static int cols_get(cols_t *c, PyObject *b, PyObject *r, PyObject *h, PyObject *sources) {
    memset(c, 0, sizeof(*c));
    if (PyObject_GetBuffer(b, &c->b, PyBUF_SIMPLE) < 0 || PyObject_GetBuffer(r, &c->r, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(h, &c->h, PyBUF_SIMPLE) < 0)
        goto fail;
    if (!PyList_Check(sources)) {
        PyErr_SetString(PyExc_TypeError, "sources must be a list");
        goto fail;
    }
    c->batches = (const int64_t *)c->b.buf;
    c->rows = (const int64_t *)c->r.buf;
    c->hdrs = (const int64_t *)c->h.buf;
    c->nb = c->b.len / (Py_ssize_t)(NB * sizeof(int64_t));
    c->nsrc = PyList_GET_SIZE(sources);
    c->srcv = PyMem_Calloc((size_t)(c->nsrc ? c->nsrc : 1), sizeof(Py_buffer));
    if (!c->srcv) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < c->nsrc; i++)
        if (PyObject_GetBuffer(PyList_GET_ITEM(sources, i), &c->srcv[i], PyBUF_SIMPLE) < 0)
            goto fail;
    Py_ssize_t nrows = c->r.len / (Py_ssize_t)(NR * sizeof(int64_t));
    Py_ssize_t nhdrs = c->h.len / (Py_ssize_t)(NH * sizeof(int64_t));
    /* the columns come from scan(); still, never trust an index into a buffer */
    for (Py_ssize_t i = 0; i < c->nb; i++) {
        const int64_t *bt = c->batches + i * NB;
        int64_t last;
        if (bt[B_SOURCE] < 0 || bt[B_SOURCE] >= c->nsrc || !span_ok(bt[B_FIRST_ROW], bt[B_ROWS], nrows) ||
            !is_i32(bt[B_LAST_OFFSET_DELTA]) || !is_i32(bt[B_BASE_SEQUENCE]) ||
            __builtin_add_overflow(bt[B_BASE_OFFSET], bt[B_LAST_OFFSET_DELTA], &last))
            goto bad;
        Py_ssize_t slen = c->srcv[bt[B_SOURCE]].len;
        for (int64_t j = bt[B_FIRST_ROW]; j < bt[B_FIRST_ROW] + bt[B_ROWS]; j++) {
            const int64_t *rw = c->rows + j * NR;
            if ((rw[R_KEY_LEN] >= 0 && !span_ok(rw[R_KEY_POS], rw[R_KEY_LEN], slen)) ||
                (rw[R_VALUE_LEN] >= 0 && !span_ok(rw[R_VALUE_POS], rw[R_VALUE_LEN], slen)) ||
                (rw[R_HEADER_COUNT] > 0 && !span_ok(rw[R_FIRST_HEADER], rw[R_HEADER_COUNT], nhdrs)))
                goto bad;
            for (int64_t k = 0; k < (rw[R_HEADER_COUNT] > 0 ? rw[R_HEADER_COUNT] : 0); k++) {
                const int64_t *hd = c->hdrs + (rw[R_FIRST_HEADER] + k) * NH;
                if (hd[H_KEY_LEN] < 0 || !span_ok(hd[H_KEY_POS], hd[H_KEY_LEN], slen) ||
                    (hd[H_VALUE_LEN] >= 0 && !span_ok(hd[H_VALUE_POS], hd[H_VALUE_LEN], slen)))
                    goto bad;
            }
        }
        if (bt[B_CRC_VALID] < 0 && (bt[B_SOURCE] != 0 || bt[B_SIZE] < CRC_START ||
                                    !span_ok(bt[B_POSITION], bt[B_SIZE], c->srcv[0].len)))
            goto bad;
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "columns do not match their sources");
fail:
    cols_release(c);
    return -1;
}

static int64_t sequence_at(int64_t base, int64_t delta) {
    if (base < 0)
        return -1;
    if (base > KL_INT_MAX - delta)
        return delta - (KL_INT_MAX - base) - 1;
    return base + delta;
}

/* texts a record decoder wrote for every row (coordinator_texts): 4 int64 per row (key start, key length,
 * value start, value length; -1: null value) into ``texts`` */
typedef struct {
    Py_buffer t, s;
    const char *texts;
    const int64_t *spans;
    Py_ssize_t nspans, ntexts;
    const char *name;             /* the decoder's name as a JSON string (render_json) */
    Py_ssize_t name_len;
    int active;
} decoded_t;

static void decoded_release(decoded_t *d) {
    if (d->t.obj)
        PyBuffer_Release(&d->t);
    if (d->s.obj)
        PyBuffer_Release(&d->s);
}

static int decoded_get(decoded_t *d, PyObject *o) {
    memset(d, 0, sizeof(*d));
    if (o == NULL || o == Py_None)
        return 0;
    PyObject *t, *s, *n;
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 3) {
        PyErr_SetString(PyExc_TypeError, "decoded must be (texts, spans, decoder name as JSON)");
        return -1;
    }
    t = PyTuple_GET_ITEM(o, 0);
    s = PyTuple_GET_ITEM(o, 1);
    n = PyTuple_GET_ITEM(o, 2);
    if (!PyBytes_Check(n)) {
        PyErr_SetString(PyExc_TypeError, "decoded: the decoder name must be bytes");
        return -1;
    }
    if (PyObject_GetBuffer(t, &d->t, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(s, &d->s, PyBUF_SIMPLE) < 0) {
        decoded_release(d);
        return -1;
    }
    d->texts = d->t.buf;
    d->ntexts = d->t.len;
    d->spans = d->s.buf;
    d->nspans = d->s.len / (8 * 4);
    d->name = PyBytes_AS_STRING(n);
    d->name_len = PyBytes_GET_SIZE(n);
    d->active = 1;
    return 0;
}

/* the key and value text of row ``j`` (value_len -1: null); -1 with an error set when out of range */
static int decoded_row(const decoded_t *d, int64_t j, const char **k, Py_ssize_t *kl, const char **v, Py_ssize_t *vl) {
    if (j < 0 || j >= d->nspans)
        goto bad;
    const int64_t *sp = d->spans + 4 * j;
    if (sp[0] < 0 || sp[1] < 0 || sp[0] + sp[1] > d->ntexts || (sp[3] >= 0 && (sp[2] < 0 || sp[2] + sp[3] > d->ntexts)))
        goto bad;
    *k = d->texts + sp[0];
    *kl = sp[1];
    *v = sp[3] < 0 ? NULL : d->texts + sp[2];
    *vl = sp[3];
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "decoded texts do not cover the rows");
    return -1;
}

static const char *CODEC[] = {"none", "gzip", "snappy", "lz4", "zstd"};

static int crc_valid_of(const cols_t *c, const int64_t *bt) {
    if (bt[B_CRC_VALID] >= 0)
        return (int)bt[B_CRC_VALID];
    const uint8_t *p = (const uint8_t *)c->srcv[0].buf + bt[B_POSITION];
    return bt[B_SIZE] >= RECORD_BATCH_OVERHEAD &&
           kl_crc32c(0, p + CRC_START, (size_t)(bt[B_SIZE] - CRC_START)) == (uint32_t)bt[B_CRC];
}

static int check_batch(const int64_t *bt) {
    if (bt[B_MAGIC] != 2 || (bt[B_ATTRIBUTES] & 7) > 4 || (bt[B_ATTRIBUTES] & 0x20)) {
        PyErr_SetString(PyExc_ValueError, "native rendering covers v2 data batches only");
        return -1;
    }
    return 0;
}

/* --- text ------------------------------------------------------------------------------------------- */
static PyObject *kl_render_text(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"batches", "rows", "headers", "sources", "out", "deep", "print_data",
                             "skip_metadata", "key_decoder", "value_decoder", "decoded", NULL};
    PyObject *b, *r, *h, *sources, *out, *decoded_o = NULL;
    int deep, print_data, skip, kdec, vdec;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOpppii|O", kwlist, &b, &r, &h, &sources, &out,
                                     &deep, &print_data, &skip, &kdec, &vdec, &decoded_o))
        return NULL;
    decoded_t dd;
    if (decoded_get(&dd, decoded_o) < 0)
        return NULL;
    cols_t c;
    if (cols_get(&c, b, r, h, sources) < 0) {
        decoded_release(&dd);
        return NULL;
    }
    sink_t sk;
    if (sink_open(&sk, out, 0) < 0)
        goto fail;
    gbuf *gp = &sk.g;
#define g (*gp)
#define PER_RECORD 160
    /* one reservation from the spans (a guess: escapes and replacements may still grow it) */
    {
        Py_ssize_t want = 0;
        for (Py_ssize_t i = 0; i < c.nb; i++) {
            const int64_t *bt = c.batches + i * NB;
            want += 480;
            if (!deep)
                continue;
            for (int64_t j = bt[B_FIRST_ROW]; j < bt[B_FIRST_ROW] + bt[B_ROWS]; j++) {
                const int64_t *rw = c.rows + j * NR;
                want += PER_RECORD + 2 * (rw[R_KEY_LEN] > 0 ? rw[R_KEY_LEN] : 0) +
                        2 * (rw[R_VALUE_LEN] > 0 ? rw[R_VALUE_LEN] : 0) + 48 * rw[R_HEADER_COUNT];
            }
        }
        if (sk.fd < 0 && gbuf_reserve(&g, want) < 0)
            goto error;
    }
#undef PER_RECORD
    for (Py_ssize_t i = 0; i < c.nb; i++) {
        const int64_t *bt = c.batches + i * NB;
        if (check_batch(bt) < 0)
            goto error;
        int64_t attrs = bt[B_ATTRIBUTES];
        const char *tstype = attrs & 0x08 ? "LogAppendTime" : "CreateTime";
        if (PUT_LIT(&g, "baseOffset: ") < 0 || put_i64(&g, bt[B_BASE_OFFSET]) < 0 ||
            PUT_LIT(&g, " lastOffset: ") < 0 || put_i64(&g, bt[B_BASE_OFFSET] + bt[B_LAST_OFFSET_DELTA]) < 0 ||
            PUT_LIT(&g, " count: ") < 0 || put_i64(&g, bt[B_COUNT]) < 0 ||
            PUT_LIT(&g, " baseSequence: ") < 0 || put_i64(&g, bt[B_BASE_SEQUENCE]) < 0 ||
            PUT_LIT(&g, " lastSequence: ") < 0 ||
            put_i64(&g, sequence_at(bt[B_BASE_SEQUENCE], bt[B_LAST_OFFSET_DELTA])) < 0 ||
            PUT_LIT(&g, " producerId: ") < 0 || put_i64(&g, bt[B_PRODUCER_ID]) < 0 ||
            PUT_LIT(&g, " producerEpoch: ") < 0 || put_i64(&g, bt[B_PRODUCER_EPOCH]) < 0 ||
            PUT_LIT(&g, " partitionLeaderEpoch: ") < 0 || put_i64(&g, bt[B_PARTITION_LEADER_EPOCH]) < 0 ||
            PUT_LIT(&g, " isTransactional: ") < 0 || put_bool(&g, attrs & 0x10) < 0 ||
            PUT_LIT(&g, " isControl: ") < 0 || put_bool(&g, attrs & 0x20) < 0 ||
            PUT_LIT(&g, " deleteHorizonMs: ") < 0)
            goto error;
        if (attrs & 0x40) {
            if (PUT_LIT(&g, "OptionalLong[") < 0 || put_i64(&g, bt[B_BASE_TIMESTAMP]) < 0 || PUT_LIT(&g, "]") < 0)
                goto error;
        } else if (PUT_LIT(&g, "OptionalLong.empty") < 0) {
            goto error;
        }
        if (PUT_LIT(&g, " position: ") < 0 || put_i64(&g, bt[B_POSITION]) < 0 || PUT_LIT(&g, " ") < 0 ||
            gbuf_put(&g, tstype, (Py_ssize_t)strlen(tstype)) < 0 || PUT_LIT(&g, ": ") < 0 ||
            put_i64(&g, bt[B_MAX_TIMESTAMP]) < 0 || PUT_LIT(&g, " size: ") < 0 || put_i64(&g, bt[B_SIZE]) < 0 ||
            PUT_LIT(&g, " magic: ") < 0 || put_i64(&g, bt[B_MAGIC]) < 0 || PUT_LIT(&g, " compresscodec: ") < 0 ||
            gbuf_put(&g, CODEC[attrs & 7], (Py_ssize_t)strlen(CODEC[attrs & 7])) < 0 ||
            PUT_LIT(&g, " crc: ") < 0 || put_i64(&g, bt[B_CRC]) < 0 || PUT_LIT(&g, " isvalid: ") < 0 ||
            put_bool(&g, crc_valid_of(&c, bt)) < 0 || PUT_LIT(&g, "\n") < 0 || sink_line(&sk) < 0)
            goto error;
        if (!deep)
            continue;
        const uint8_t *src = (const uint8_t *)c.srcv[bt[B_SOURCE]].buf;
        for (int64_t j = bt[B_FIRST_ROW]; j < bt[B_FIRST_ROW] + bt[B_ROWS]; j++) {
            const int64_t *rw = c.rows + j * NR;
            if (!skip) {
                if (PUT_LIT(&g, "| offset: ") < 0 || put_i64(&g, rw[R_OFFSET]) < 0 || PUT_LIT(&g, " ") < 0 ||
                    gbuf_put(&g, tstype, (Py_ssize_t)strlen(tstype)) < 0 || PUT_LIT(&g, ": ") < 0 ||
                    put_i64(&g, rw[R_TIMESTAMP]) < 0 || PUT_LIT(&g, " keySize: ") < 0 ||
                    put_i64(&g, rw[R_KEY_LEN]) < 0 || PUT_LIT(&g, " valueSize: ") < 0 ||
                    put_i64(&g, rw[R_VALUE_LEN]) < 0 || PUT_LIT(&g, " sequence: ") < 0 ||
                    put_i64(&g, rw[R_SEQUENCE]) < 0 || PUT_LIT(&g, " headerKeys: [") < 0)
                    goto error;
                for (int64_t k = 0; k < rw[R_HEADER_COUNT]; k++) {
                    const int64_t *hd = c.hdrs + (rw[R_FIRST_HEADER] + k) * NH;
                    if ((k && PUT_LIT(&g, ",") < 0) ||
                        put_text(&g, DEC_STRING, src + hd[H_KEY_POS], hd[H_KEY_LEN]) < 0 || sink_line(&sk) < 0)
                        goto error;
                }
                if (PUT_LIT(&g, "]") < 0)
                    goto error;
            }
            if (print_data && dd.active) {          /* a record decoder's texts: key, then payload */
                const char *kt, *vt;
                Py_ssize_t kl, vl;
                if (decoded_row(&dd, j, &kt, &kl, &vt, &vl) < 0 ||
                    (skip ? PUT_LIT(&g, "| key: ") : PUT_LIT(&g, " key: ")) < 0 || gbuf_put(&g, kt, kl) < 0 ||
                    PUT_LIT(&g, " payload: ") < 0 || (vt ? gbuf_put(&g, vt, vl) : PUT_LIT(&g, "<DELETE>")) < 0)
                    goto error;
            } else if (print_data) {
                if (kdec != DEC_NONE && rw[R_KEY_LEN] >= 0) {
                    if ((skip ? PUT_LIT(&g, "| key: ") : PUT_LIT(&g, " key: ")) < 0 ||
                        put_text(&g, kdec, src + rw[R_KEY_POS], rw[R_KEY_LEN]) < 0)
                        goto error;
                }
                if (vdec != DEC_NONE && rw[R_VALUE_LEN] >= 0) {
                    if (PUT_LIT(&g, " payload: ") < 0 || put_text(&g, vdec, src + rw[R_VALUE_POS], rw[R_VALUE_LEN]) < 0)
                        goto error;
                }
            }
            if (PUT_LIT(&g, "\n") < 0 || sink_line(&sk) < 0)
                goto error;
        }
    }
    cols_release(&c);
    decoded_release(&dd);
    if (sink_close(&sk, 1) < 0)
        return NULL;
    Py_RETURN_NONE;
error:
    if (sink_close(&sk, 0) < 0)
        PyErr_Clear();
fail:
    cols_release(&c);
    decoded_release(&dd);
    return NULL;
#undef g
}

/* --- JSON lines ------------------------------------------------------------------------------------- */
#define KV(g, lit, v) (PUT_LIT(g, lit) < 0 || put_i64(g, v) < 0)

static PyObject *kl_render_json(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"batches", "rows", "headers", "sources", "out", "file_json", "deep", "print_data",
                             "key_decoder", "value_decoder", "decoded", NULL};
    PyObject *b, *r, *h, *sources, *out, *decoded_o = NULL;
    const char *fj;
    Py_ssize_t fjlen;
    int deep, print_data, kdec, vdec;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOy#ppii|O", kwlist, &b, &r, &h, &sources, &out,
                                     &fj, &fjlen, &deep, &print_data, &kdec, &vdec, &decoded_o))
        return NULL;
    if (kdec == DEC_JSON_TEXT || vdec == DEC_JSON_TEXT) {
        PyErr_SetString(PyExc_ValueError, "the json payload decoder is not pure formatting");
        return NULL;
    }
    decoded_t dd;
    if (decoded_get(&dd, decoded_o) < 0)
        return NULL;
    cols_t c;
    if (cols_get(&c, b, r, h, sources) < 0) {
        decoded_release(&dd);
        return NULL;
    }
    sink_t sk;
    if (sink_open(&sk, out, 1) < 0)
        goto fail;
    gbuf *gp = &sk.g;
#define g (*gp)
#define PER_RECORD (220 + fjlen)
    /* one reservation from the spans (a guess: escapes and replacements may still grow it) */
    {
        Py_ssize_t want = 0;
        for (Py_ssize_t i = 0; i < c.nb; i++) {
            const int64_t *bt = c.batches + i * NB;
            want += 480;
            if (!deep)
                continue;
            for (int64_t j = bt[B_FIRST_ROW]; j < bt[B_FIRST_ROW] + bt[B_ROWS]; j++) {
                const int64_t *rw = c.rows + j * NR;
                want += PER_RECORD + 2 * (rw[R_KEY_LEN] > 0 ? rw[R_KEY_LEN] : 0) +
                        2 * (rw[R_VALUE_LEN] > 0 ? rw[R_VALUE_LEN] : 0) + 48 * rw[R_HEADER_COUNT];
            }
        }
        if (sk.fd < 0 && gbuf_reserve(&g, want) < 0)
            goto error;
    }
#undef PER_RECORD
    for (Py_ssize_t i = 0; i < c.nb; i++) {
        const int64_t *bt = c.batches + i * NB;
        if (check_batch(bt) < 0)
            goto error;
        int64_t attrs = bt[B_ATTRIBUTES];
        const char *tstype = attrs & 0x08 ? "\"LogAppendTime\"" : "\"CreateTime\"";
        Py_ssize_t tslen = (Py_ssize_t)strlen(tstype);
        if (PUT_LIT(&g, "{\"type\":\"batch\",\"file\":") < 0 || gbuf_put(&g, fj, fjlen) < 0 ||
            KV(&g, ",\"position\":", bt[B_POSITION]) || KV(&g, ",\"base_offset\":", bt[B_BASE_OFFSET]) ||
            KV(&g, ",\"last_offset\":", bt[B_BASE_OFFSET] + bt[B_LAST_OFFSET_DELTA]) ||
            KV(&g, ",\"count\":", bt[B_COUNT]) || KV(&g, ",\"size\":", bt[B_SIZE]) ||
            KV(&g, ",\"magic\":", bt[B_MAGIC]) || PUT_LIT(&g, ",\"codec\":\"") < 0 ||
            gbuf_put(&g, CODEC[attrs & 7], (Py_ssize_t)strlen(CODEC[attrs & 7])) < 0 ||
            KV(&g, "\",\"crc\":", bt[B_CRC]) || PUT_LIT(&g, ",\"crc_valid\":") < 0 ||
            put_bool(&g, crc_valid_of(&c, bt)) < 0 || KV(&g, ",\"attributes\":", attrs) ||
            PUT_LIT(&g, ",\"timestamp_type\":") < 0 || gbuf_put(&g, tstype, tslen) < 0 ||
            KV(&g, ",\"base_timestamp\":", bt[B_BASE_TIMESTAMP]) || KV(&g, ",\"max_timestamp\":", bt[B_MAX_TIMESTAMP]) ||
            KV(&g, ",\"producer_id\":", bt[B_PRODUCER_ID]) || KV(&g, ",\"producer_epoch\":", bt[B_PRODUCER_EPOCH]) ||
            KV(&g, ",\"base_sequence\":", bt[B_BASE_SEQUENCE]) ||
            KV(&g, ",\"last_sequence\":", sequence_at(bt[B_BASE_SEQUENCE], bt[B_LAST_OFFSET_DELTA])) ||
            KV(&g, ",\"partition_leader_epoch\":", bt[B_PARTITION_LEADER_EPOCH]) ||
            PUT_LIT(&g, ",\"is_transactional\":") < 0 || put_bool(&g, attrs & 0x10) < 0 ||
            PUT_LIT(&g, ",\"is_control\":") < 0 || put_bool(&g, attrs & 0x20) < 0 ||
            PUT_LIT(&g, ",\"delete_horizon_ms\":") < 0)
            goto error;
        if (attrs & 0x40 ? put_i64(&g, bt[B_BASE_TIMESTAMP]) < 0 : PUT_LIT(&g, "null") < 0)
            goto error;
        if (PUT_LIT(&g, "}\n") < 0 || sink_line(&sk) < 0)
            goto error;
        if (!deep)
            continue;
        const uint8_t *src = (const uint8_t *)c.srcv[bt[B_SOURCE]].buf;
        for (int64_t j = bt[B_FIRST_ROW]; j < bt[B_FIRST_ROW] + bt[B_ROWS]; j++) {
            const int64_t *rw = c.rows + j * NR;
            if (PUT_LIT(&g, "{\"type\":\"record\",\"file\":") < 0 || gbuf_put(&g, fj, fjlen) < 0 ||
                KV(&g, ",\"batch_position\":", bt[B_POSITION]) || KV(&g, ",\"offset\":", rw[R_OFFSET]) ||
                KV(&g, ",\"timestamp\":", rw[R_TIMESTAMP]) || PUT_LIT(&g, ",\"timestamp_type\":") < 0 ||
                gbuf_put(&g, tstype, tslen) < 0 || KV(&g, ",\"key_size\":", rw[R_KEY_LEN]) ||
                KV(&g, ",\"value_size\":", rw[R_VALUE_LEN]) || KV(&g, ",\"sequence\":", rw[R_SEQUENCE]) ||
                PUT_LIT(&g, ",\"headers\":[") < 0)
                goto error;
            for (int64_t k = 0; k < rw[R_HEADER_COUNT]; k++) {
                const int64_t *hd = c.hdrs + (rw[R_FIRST_HEADER] + k) * NH;
                const uint8_t *kp = src + hd[H_KEY_POS];
                Py_ssize_t kl = hd[H_KEY_LEN];
                if ((k && PUT_LIT(&g, ",") < 0) || PUT_LIT(&g, "{\"key\":\"") < 0)
                    goto error;
                if (utf8_valid(kp, kl)) {
                    if (put_json_chars(&g, kp, kl) < 0 || PUT_LIT(&g, "\"") < 0)
                        goto error;
                } else if (put_utf8_replaced(&g, kp, kl, 1) < 0 || PUT_LIT(&g, "\",\"key_hex\":\"") < 0 ||
                           put_hex(&g, kp, kl) < 0 || PUT_LIT(&g, "\"") < 0) {
                    goto error;
                }
                if (put_json_data(&g, "value", 5, vdec, hd[H_VALUE_LEN] < 0 ? NULL : src + hd[H_VALUE_POS],
                                  hd[H_VALUE_LEN]) < 0 ||
                    PUT_LIT(&g, "}") < 0 || sink_line(&sk) < 0)
                    goto error;
            }
            if (PUT_LIT(&g, "]") < 0)
                goto error;
            if (print_data && dd.active) {          /* "decoder", then the decoded key and value */
                const char *kt, *vt;
                Py_ssize_t kl, vl;
                if (decoded_row(&dd, j, &kt, &kl, &vt, &vl) < 0 || PUT_LIT(&g, ",\"decoder\":") < 0 ||
                    gbuf_put(&g, dd.name, dd.name_len) < 0 || PUT_LIT(&g, ",\"key\":") < 0 ||
                    gbuf_put(&g, kt, kl) < 0 || PUT_LIT(&g, ",\"value\":") < 0 ||
                    (vt ? gbuf_put(&g, vt, vl) : PUT_LIT(&g, "null")) < 0)
                    goto error;
            } else if (print_data) {
                if (put_json_data(&g, "key", 3, kdec, rw[R_KEY_LEN] < 0 ? NULL : src + rw[R_KEY_POS], rw[R_KEY_LEN]) < 0 ||
                    put_json_data(&g, "value", 5, vdec, rw[R_VALUE_LEN] < 0 ? NULL : src + rw[R_VALUE_POS],
                                  rw[R_VALUE_LEN]) < 0)
                    goto error;
            }
            if (PUT_LIT(&g, "}\n") < 0 || sink_line(&sk) < 0)
                goto error;
        }
    }
    cols_release(&c);
    decoded_release(&dd);
    if (sink_close(&sk, 1) < 0)
        return NULL;
    Py_RETURN_NONE;
error:
    if (sink_close(&sk, 0) < 0)
        PyErr_Clear();
fail:
    cols_release(&c);
    decoded_release(&dd);
    return NULL;
#undef g
}


/* --- the module ------------------------------------------------------------------------------------- */
static PyMethodDef methods[] = {
    {"render_text", (PyCFunction)(void (*)(void))kl_render_text, METH_VARARGS | METH_KEYWORDS, "Kafka text lines"},
    {"render_json", (PyCFunction)(void (*)(void))kl_render_json, METH_VARARGS | METH_KEYWORDS, "JSON lines"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native_render",
                                       "dump-log's line writers over the columns of the compiled record path", -1,
                                       methods};

PyMODINIT_FUNC PyInit__native_render(void) {
    kl_crc32c_init();
    kl_text_init();
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    /* the column layout it reads (native.h), checked by the Python seam against kafkalog_formats.columns */
    if (PyModule_AddIntConstant(m, "NB", NB) < 0 || PyModule_AddIntConstant(m, "NR", NR) < 0 ||
        PyModule_AddIntConstant(m, "NH", NH) < 0 ||
        PyModule_AddIntConstant(m, "LAYOUT_VERSION", KL_LAYOUT_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
