/* Coordinator records (__consumer_offsets and the like) decoded by programs compiled from the schema layer
 * (kafkalog_formats.message_program compiles a kafka_message.Message at one version), written as the JSON
 * text record_decoders._coordinator gives for them:
 *
 *   key    {"type":"<record type>","data":{...}}
 *   value  {"<label>":"<version>","data":{...}}        (a null value: no text, the renderers print <DELETE>)
 *
 * The interpreter reads exactly as Message.read (kafka_message._Plan) and writes what Message.to_json and
 * the compact JSON encoders print. It declines ("bail") every record whose output is not pure formatting
 * of a complete decode: an unknown record type or version, bytes left after the known fields, a known
 * tagged field present, text that is not strict UTF-8, any decoding error. The renderers then print that
 * record with the pure decoder (its markers, warnings and errors), so output is identical by construction;
 * tests/test_native_parity.py compares both.
 *
 * Program bytes (message_program.py):
 *   struct  u8 field count, u8 flexible, fields..., [flexible: u8 known tag count, u32 tags...]
 *   field   u8 name length, name ("\"name\":"), type
 *   type    u8 op, and for STRING/BYTES/ARRAY/STRUCT a u8 nullable flag, for ARRAY/STRUCT a u32 length and
 *           the element type / struct; ENUM8 (an int8 printed by name) a u8 count and the names, each a u8
 *           length and its JSON string (a value without a name: bail, the pure decoder warns)
 */
#include "text.h"

enum { OP_INT8 = 1, OP_INT16, OP_INT32, OP_INT64, OP_UINT16, OP_UINT32, OP_BOOL, OP_UUID, OP_STRING, OP_BYTES,
       OP_ARRAY, OP_STRUCT, OP_ENUM8 };

#define BAIL 0
#define MAX_DEPTH 32

typedef struct {
    const uint8_t *d;
    Py_ssize_t pos, end;
    gbuf *out;
    int depth;
} reader_t;

static inline uint32_t prog_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* kafka_message._uvarint / varint.read_unsigned_varint: at most 5 bytes */
static int rd_uvar(reader_t *r, uint64_t *out) {
    uint64_t raw = 0;
    int shift = 0;
    Py_ssize_t p = r->pos;
    for (;;) {
        if (p >= r->end)
            return BAIL;
        uint8_t b = r->d[p++];
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80)
            break;
        shift += 7;
        if (shift > 28)
            return BAIL;
    }
    r->pos = p;
    *out = raw;
    return 1;
}

/* a length: uvarint(n + 1) when flexible, else int16 (strings) or int32; *n < 0: null */
static int rd_len(reader_t *r, int flexible, int wide, int64_t *n) {
    if (flexible) {
        uint64_t v;
        if (!rd_uvar(r, &v))
            return BAIL;
        *n = (int64_t)v - 1;
        return 1;
    }
    Py_ssize_t size = wide ? 4 : 2;
    if (r->pos + size > r->end)
        return BAIL;
    *n = wide ? rd_i32(r->d + r->pos) : rd_i16(r->d + r->pos);
    r->pos += size;
    return 1;
}

static int emit_struct(reader_t *r, const uint8_t *prog, Py_ssize_t plen, Py_ssize_t *used);

/* one value of type ``prog``: 1 written, 0 bail, -1 error; *used: bytes of program it takes */
static int emit_type(reader_t *r, const uint8_t *prog, Py_ssize_t plen, int flexible, Py_ssize_t *used) {
    if (plen < 1)
        return BAIL;
    int op = prog[0];
    gbuf *g = r->out;
    const uint8_t *d = r->d;
    switch (op) {
    case OP_INT8: case OP_INT16: case OP_INT32: case OP_INT64: case OP_UINT16: case OP_UINT32: {
        static const int SIZE[] = {0, 1, 2, 4, 8, 2, 4};
        int size = SIZE[op];
        if (r->pos + size > r->end)
            return BAIL;
        const uint8_t *p = d + r->pos;
        int64_t v = op == OP_INT8 ? (int8_t)p[0] : op == OP_INT16 ? rd_i16(p) : op == OP_INT32 ? rd_i32(p)
                  : op == OP_INT64 ? rd_i64(p) : op == OP_UINT16 ? (int64_t)(uint16_t)rd_i16(p) : (int64_t)rd_u32(p);
        r->pos += size;
        *used = 1;
        return put_i64(g, v) < 0 ? -1 : 1;
    }
    case OP_ENUM8: {
        if (plen < 2 || r->pos >= r->end)
            return BAIL;
        int count = prog[1], v = (int8_t)d[r->pos];
        Py_ssize_t p = 2;
        for (int i = 0; i < count; i++) {
            if (p >= plen || p + 1 + prog[p] > plen)
                return BAIL;
            p += 1 + prog[p];
        }
        *used = p;
        if (v < 0 || v >= count)
            return BAIL;
        p = 2;
        for (int i = 0; i < v; i++)
            p += 1 + prog[p];
        r->pos++;
        return gbuf_put(g, prog + p + 1, prog[p]) < 0 ? -1 : 1;
    }
    case OP_BOOL:
        if (r->pos >= r->end)
            return BAIL;
        *used = 1;
        return (d[r->pos++] ? gbuf_put(g, "true", 4) : gbuf_put(g, "false", 5)) < 0 ? -1 : 1;
    case OP_UUID:
        if (r->pos + 16 > r->end)
            return BAIL;
        *used = 1;
        if (gbuf_put(g, "\"", 1) < 0 || put_base64_of(g, d + r->pos, 16, KL_B64URL, 0) < 0 || gbuf_put(g, "\"", 1) < 0)
            return -1;
        r->pos += 16;
        return 1;
    case OP_STRING: case OP_BYTES: {
        if (plen < 2)
            return BAIL;
        int nullable = prog[1];
        int64_t n;
        if (!rd_len(r, flexible, op == OP_BYTES, &n))
            return BAIL;
        *used = 2;
        if (n < 0)
            return nullable ? (gbuf_put(g, "null", 4) < 0 ? -1 : 1) : BAIL;
        if ((op == OP_STRING && n > 0x7FFF) || n > r->end - r->pos)
            return BAIL;
        const uint8_t *p = d + r->pos;
        if (op == OP_STRING) {
            if (!utf8_valid(p, n))
                return BAIL;
            if (put_json_string(g, p, n) < 0)
                return -1;
        } else if (gbuf_put(g, "\"", 1) < 0 || put_base64(g, p, n) < 0 || gbuf_put(g, "\"", 1) < 0) {
            return -1;
        }
        r->pos += n;
        return 1;
    }
    case OP_ARRAY: {
        if (plen < 6)
            return BAIL;
        int nullable = prog[1];
        Py_ssize_t elen = prog_u32(prog + 2);
        if (elen > plen - 6)
            return BAIL;
        const uint8_t *elem = prog + 6;
        *used = 6 + elen;
        int64_t n;
        if (!rd_len(r, flexible, 1, &n))
            return BAIL;
        if (n < 0)
            return nullable ? (gbuf_put(g, "null", 4) < 0 ? -1 : 1) : BAIL;
        if (n > r->end - r->pos)
            return BAIL;
        if (gbuf_put(g, "[", 1) < 0)
            return -1;
        for (int64_t i = 0; i < n; i++) {
            Py_ssize_t u;
            if (i && gbuf_put(g, ",", 1) < 0)
                return -1;
            int rc = emit_type(r, elem, elen, flexible, &u);
            if (rc <= 0)
                return rc;
        }
        return gbuf_put(g, "]", 1) < 0 ? -1 : 1;
    }
    case OP_STRUCT: {
        if (plen < 6)
            return BAIL;
        int nullable = prog[1];
        Py_ssize_t slen = prog_u32(prog + 2);
        if (slen > plen - 6)
            return BAIL;
        *used = 6 + slen;
        if (nullable) {                       /* an untagged nullable struct: an int8 marker, < 0 null */
            if (r->pos >= r->end)
                return BAIL;
            if (d[r->pos++] >= 0x80)
                return gbuf_put(g, "null", 4) < 0 ? -1 : 1;
        }
        Py_ssize_t u;
        return emit_struct(r, prog + 6, slen, &u);
    }
    default:
        return BAIL;
    }
}

static int emit_struct(reader_t *r, const uint8_t *prog, Py_ssize_t plen, Py_ssize_t *used) {
    if (plen < 2 || ++r->depth > MAX_DEPTH)
        return BAIL;
    int nfields = prog[0], flexible = prog[1];
    Py_ssize_t p = 2;
    gbuf *g = r->out;
    if (gbuf_put(g, "{", 1) < 0)
        return -1;
    for (int i = 0; i < nfields; i++) {
        if (p >= plen)
            return BAIL;
        int nlen = prog[p];
        if (p + 1 + nlen > plen)
            return BAIL;
        if ((i && gbuf_put(g, ",", 1) < 0) || gbuf_put(g, prog + p + 1, nlen) < 0)
            return -1;
        p += 1 + nlen;
        Py_ssize_t u;
        int rc = emit_type(r, prog + p, plen - p, flexible, &u);
        if (rc <= 0)
            return rc;
        p += u;
    }
    if (flexible) {                           /* the tagged section: unknown tags skipped, known ones bail */
        if (p >= plen)
            return BAIL;
        int nknown = prog[p++];
        if (p + 4 * nknown > plen)
            return BAIL;
        const uint8_t *known = prog + p;
        p += 4 * nknown;
        uint64_t count;
        if (!rd_uvar(r, &count))
            return BAIL;
        for (uint64_t k = 0; k < count; k++) {
            uint64_t tag, size;
            if (!rd_uvar(r, &tag) || !rd_uvar(r, &size))
                return BAIL;
            if (size > (uint64_t)(r->end - r->pos))
                return BAIL;
            for (int j = 0; j < nknown; j++)
                if (prog_u32(known + 4 * j) == tag)
                    return BAIL;
            r->pos += (Py_ssize_t)size;
        }
    }
    r->depth--;
    *used = p;
    return gbuf_put(g, "}", 1) < 0 ? -1 : 1;
}

/* "{"<label>":"<n>","data":<struct>}" of the message ``prog`` at r->pos, which must end the bytes */
static int emit_envelope(reader_t *r, const char *label, Py_ssize_t label_len, int64_t n, const uint8_t *prog,
                         Py_ssize_t plen) {
    gbuf *g = r->out;
    if (gbuf_put(g, "{\"", 2) < 0 || gbuf_put(g, label, label_len) < 0 || gbuf_put(g, "\":\"", 3) < 0 ||
        put_i64(g, n) < 0 || gbuf_put(g, "\",\"data\":", 9) < 0)
        return -1;
    Py_ssize_t u;
    r->depth = 0;
    int rc = emit_struct(r, prog, plen, &u);
    if (rc <= 0)
        return rc;
    if (r->pos != r->end)
        return BAIL;                          /* bytes after the known fields: a warning, the pure path's */
    return gbuf_put(g, "}", 1) < 0 ? -1 : 1;
}

static int prog_at(PyObject *seq, int64_t i, const uint8_t **p, Py_ssize_t *n) {
    if (i < 0 || i >= PyTuple_GET_SIZE(seq))
        return 0;
    PyObject *o = PyTuple_GET_ITEM(seq, i);
    if (!PyBytes_Check(o))
        return 0;
    *p = (const uint8_t *)PyBytes_AS_STRING(o);
    *n = PyBytes_GET_SIZE(o);
    return 1;
}

/* coordinator_texts(batches, rows, sources, keys, values, label)
 *   -> (texts bytearray, spans bytearray: 4 int64 per row (key start, key length, value start, value
 *      length; -1: null value), [rows the pure decoder must print])
 * ``keys``: a tuple of key programs by record type (None: unknown); ``values``: a tuple by record type of
 * tuples of value programs by version (None: unknown version or a type the pure decoder prints). */
PyObject *kl_coordinator_texts(PyObject *self, PyObject *args) {
    PyObject *b, *rws, *sources, *keys, *values;
    const char *label;
    Py_ssize_t label_len;
    if (!PyArg_ParseTuple(args, "OOOO!O!s#", &b, &rws, &sources, &PyTuple_Type, &keys, &PyTuple_Type, &values,
                          &label, &label_len))
        return NULL;
    Py_buffer bv, rv;
    if (PyObject_GetBuffer(b, &bv, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(rws, &rv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&bv);
        return NULL;
    }
    PyObject *srcs = PySequence_Fast(sources, "sources must be a sequence");
    PyObject *bails = PyList_New(0);
    Py_ssize_t nsrc = srcs ? PySequence_Fast_GET_SIZE(srcs) : 0;
    Py_buffer *sv = srcs ? PyMem_Calloc((size_t)(nsrc ? nsrc : 1), sizeof(Py_buffer)) : NULL;
    gbuf texts = {0}, spans = {0};
    int ok = srcs && bails && sv && gbuf_init(&texts, NULL, 0) == 0 && gbuf_init(&spans, NULL, 0) == 0;
    Py_ssize_t got = 0;
    for (; ok && got < nsrc; got++)
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(srcs, got), &sv[got], PyBUF_SIMPLE) < 0)
            ok = 0;
    const int64_t *bt_all = bv.buf, *rows = rv.buf;
    Py_ssize_t nb = bv.len / (8 * NB), nr = rv.len / (8 * NR);
    for (Py_ssize_t j = 0; ok && j < nr; j++) {    /* one span set per row, indexed by row (declined: -1) */
        int64_t none[4] = {0, -1, 0, -1};
        if (gbuf_put_i64s(&spans, none, 4) < 0)
            ok = 0;
    }
    for (Py_ssize_t i = 0; ok && i < nb; i++) {
        const int64_t *bt = bt_all + i * NB;
        int64_t src = bt[B_SOURCE], first = bt[B_FIRST_ROW], count = bt[B_ROWS];
        if (src < 0 || src >= nsrc || first < 0 || count < 0 || first + count > nr) {
            PyErr_SetString(PyExc_ValueError, "coordinator_texts: inconsistent columns");
            ok = 0;
            break;
        }
        const uint8_t *base = sv[src].buf;
        Py_ssize_t blen = sv[src].len;
        for (int64_t j = first; ok && j < first + count; j++) {
            const int64_t *rw = rows + j * NR;
            int64_t sp[4] = {0, -1, 0, -1};
            int status = 1;
            int64_t kp = rw[R_KEY_POS], kl = rw[R_KEY_LEN], vp = rw[R_VALUE_POS], vl = rw[R_VALUE_LEN];
            if (kl < 2 || kp < 0 || kp + kl > blen || (vl >= 0 && (vl < 2 || vp < 0 || vp + vl > blen))) {
                status = BAIL;                /* a missing or short key or value: the pure decoder's markers */
            } else {
                int64_t type = rd_i16(base + kp);
                const uint8_t *kprog, *vprog;
                Py_ssize_t klen, vlen;
                Py_ssize_t mark = texts.len;
                if (!prog_at(keys, type, &kprog, &klen)) {
                    status = BAIL;
                } else {
                    reader_t r = {base, kp + 2, kp + kl, &texts, 0};
                    sp[0] = texts.len;
                    status = emit_envelope(&r, "type", 4, type, kprog, klen);
                    sp[1] = texts.len - sp[0];
                    if (status == 1 && vl >= 0) {
                        int64_t version = rd_i16(base + vp);
                        PyObject *byver = type < PyTuple_GET_SIZE(values) ? PyTuple_GET_ITEM(values, type) : Py_None;
                        if (!PyTuple_Check(byver) || !prog_at(byver, version, &vprog, &vlen)) {
                            status = BAIL;
                        } else {
                            reader_t rv2 = {base, vp + 2, vp + vl, &texts, 0};
                            sp[2] = texts.len;
                            status = emit_envelope(&rv2, label, label_len, version, vprog, vlen);
                            sp[3] = texts.len - sp[2];
                        }
                    }
                }
                if (status != 1)
                    texts.len = mark;         /* nothing of a declined record stays */
            }
            if (status < 0) {
                ok = 0;
                break;
            }
            if (status == BAIL) {
                sp[0] = sp[2] = 0;
                sp[1] = sp[3] = -1;
                PyObject *jo = PyLong_FromSsize_t((Py_ssize_t)j);
                if (!jo || PyList_Append(bails, jo) < 0)
                    ok = 0;
                Py_XDECREF(jo);
            }
            if (ok)
                memcpy(gbuf_ptr(&spans) + 32 * j, sp, 32);
        }
    }
    for (Py_ssize_t k = 0; k < got; k++)
        PyBuffer_Release(&sv[k]);
    PyMem_Free(sv);
    Py_XDECREF(srcs);
    PyBuffer_Release(&bv);
    PyBuffer_Release(&rv);
    PyObject *t = ok ? gbuf_finish(&texts) : NULL, *s = ok ? gbuf_finish(&spans) : NULL;
    if (!ok || !t || !s) {
        gbuf_clear(&texts);
        gbuf_clear(&spans);
        Py_XDECREF(t);
        Py_XDECREF(s);
        Py_XDECREF(bails);
        return NULL;
    }
    return Py_BuildValue("(NNN)", t, s, bails);
}
