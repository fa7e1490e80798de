/* Varints, v2 batch headers and records: the C twin of record_batch.iter_records / varint.read_varint.
 *
 * The checks are those of the pure decoder, in its order (Kafka DefaultRecord.readFrom and
 * DefaultRecordBatch's record iterator): record length within the section and >= 6, every varint
 * within the record body, key/value/header lengths within the body, header count <= bytes left,
 * the body consumed exactly, the section consumed exactly after `count` records. A failed check returns
 * -1 and the caller hands the batch to the pure path, which raises the FormatError with its message and
 * position. Offsets and timestamps that do not fit int64 are also handed over (Python ints do not
 * overflow).
 */
#include "native.h"

/* --- gbuf ----------------------------------------------------------------------------------------- */
int gbuf_init(gbuf *g, PyObject *existing, Py_ssize_t reserve) {
    if (existing) {
        Py_INCREF(existing);
        g->ba = existing;
        g->len = PyByteArray_GET_SIZE(existing);
    } else {
        g->ba = PyByteArray_FromStringAndSize(NULL, 0);
        if (!g->ba)
            return -1;
        g->len = 0;
    }
    g->cap = g->len;
    return reserve > 0 ? gbuf_reserve(g, reserve) : 0;
}

int gbuf_grow(gbuf *g, Py_ssize_t extra) {
    Py_ssize_t want = g->len + extra;
    Py_ssize_t cap = g->cap < 256 ? 256 : g->cap;
    while (cap < want) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (PyByteArray_Resize(g->ba, cap) < 0)
        return -1;
    g->cap = cap;
    return 0;
}

PyObject *gbuf_finish(gbuf *g) {
    if (PyByteArray_Resize(g->ba, g->len) < 0)
        return NULL;
    g->cap = g->len;
    PyObject *r = g->ba;
    g->ba = NULL;
    return r;
}

void gbuf_clear(gbuf *g) { Py_CLEAR(g->ba); }

/* --- varints (varint.read_varint / read_varlong) ----------------------------------------------- */
int rd_varint(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t limit, int32_t *out) {
    Py_ssize_t p = *pos;
    if (p >= limit)
        return -1;
    uint32_t b = d[p++];
    if (b < 0x80) {
        *out = (int32_t)((b >> 1) ^ (0u - (b & 1)));
        *pos = p;
        return 0;
    }
    uint64_t raw = b & 0x7f;
    int shift = 7;
    for (;;) {
        if (p >= limit)
            return -1;
        b = d[p++];
        raw |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80)
            break;
        shift += 7;
        if (shift > 28)
            return -1;                    /* "Varint is too long" */
    }
    uint32_t r = (uint32_t)raw;
    *out = (int32_t)((r >> 1) ^ (0u - (r & 1)));
    *pos = p;
    return 0;
}

int rd_varlong(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t limit, int64_t *out) {
    Py_ssize_t p = *pos;
    if (p >= limit)
        return -1;
    uint64_t b = d[p++];
    if (b < 0x80) {
        *out = (int64_t)((b >> 1) ^ (0ull - (b & 1)));
        *pos = p;
        return 0;
    }
    uint64_t raw = b & 0x7f;
    int shift = 7;
    for (;;) {
        if (p >= limit)
            return -1;
        b = d[p++];
        raw |= (b & 0x7f) << shift;       /* bits past 63 fall off, as the pure mask does */
        if (b < 0x80)
            break;
        shift += 7;
        if (shift > 63)
            return -1;                    /* "Varlong is too long" */
    }
    *out = (int64_t)((raw >> 1) ^ (0ull - (raw & 1)));
    *pos = p;
    return 0;
}

/* --- batch header --------------------------------------------------------------------------------- */
void parse_batch_header(const uint8_t *p, int64_t position, batch_hdr *h) {
    h->position = position;
    h->base_offset = rd_i64(p);
    h->length = rd_i32(p + 8);
    h->size = LOG_OVERHEAD + (int64_t)h->length;
    h->partition_leader_epoch = rd_i32(p + 12);
    h->magic = (int8_t)p[16];
    h->crc = rd_u32(p + 17);
    h->attributes = rd_i16(p + 21);
    h->last_offset_delta = rd_i32(p + 23);
    h->base_timestamp = rd_i64(p + 27);
    h->max_timestamp = rd_i64(p + 35);
    h->producer_id = rd_i64(p + 43);
    h->producer_epoch = rd_i16(p + 51);
    h->base_sequence = rd_i32(p + 53);
    h->count = rd_i32(p + 57);
}

/* --- records -------------------------------------------------------------------------------------- */
int rcursor_init(rcursor *c, const uint8_t *d, Py_ssize_t len, int32_t count, int64_t base_offset,
                 int64_t base_timestamp, int32_t base_sequence, int log_append_time, int64_t max_timestamp) {
    c->d = d;
    c->pos = 0;
    c->end = len;
    c->base_offset = base_offset;
    c->base_timestamp = base_timestamp;
    c->base_sequence = base_sequence;
    c->log_append_time = log_append_time;
    c->max_timestamp = max_timestamp;
    c->remaining = count;
    return count < 0 ? -1 : 0;            /* "Found invalid record count" */
}

int rcursor_next(rcursor *c, record_t *r) {
    if (c->remaining <= 0)
        return c->pos == c->end ? 0 : -1; /* "records still remaining in file" */
    c->remaining--;
    const uint8_t *d = c->d;
    Py_ssize_t pos = c->pos, end = c->end;
    if (pos >= end)
        return -1;                        /* premature EOF */
    r->start = pos;
    int32_t length, off_delta, klen, vlen, nh;
    int64_t ts_delta;
    if (rd_varint(d, &pos, end, &length) < 0)
        return -1;
    if (length < 0 || length > end - pos)
        return -1;                        /* Invalid record size */
    if (length < 6)
        return -1;                        /* record length too short */
    Py_ssize_t body_end = pos + length;
    r->attributes = d[pos];
    pos++;
    if (rd_varlong(d, &pos, body_end, &ts_delta) < 0)
        return -1;
    /* a record whose timestamp delta fills its body is invalid (the pure path: "record ends before its
     * offset delta"); Kafka's DefaultRecord.readFrom reads on into the next record's bytes and fails on
     * the size check or a BufferUnderflowException, an InvalidRecordException either way */
    if (rd_varint(d, &pos, body_end, &off_delta) < 0)
        return -1;
    if (pos >= body_end)
        return -1;                        /* record ends before its key */
    if (rd_varint(d, &pos, body_end, &klen) < 0)
        return -1;
    if (klen >= 0) {
        if (klen > body_end - pos)
            return -1;                    /* key extends past the record */
        r->key_pos = pos;
        r->key_len = klen;
        pos += klen;
    } else {
        r->key_pos = 0;
        r->key_len = -1;
    }
    if (pos >= body_end)
        return -1;                        /* record ends before its value */
    if (rd_varint(d, &pos, body_end, &vlen) < 0)
        return -1;
    if (vlen >= 0) {
        if (vlen > body_end - pos)
            return -1;                    /* value extends past the record */
        r->value_pos = pos;
        r->value_len = vlen;
        pos += vlen;
    } else {
        r->value_pos = 0;
        r->value_len = -1;
    }
    if (pos >= body_end)
        return -1;                        /* record ends before its headers */
    if (rd_varint(d, &pos, body_end, &nh) < 0)
        return -1;
    r->headers_pos = pos;
    r->header_count = nh;
    if (nh != 0) {
        if (nh < 0 || nh > body_end - pos)
            return -1;                    /* invalid number of record headers */
        for (int32_t i = 0; i < nh; i++) {
            int32_t hklen, hvlen;
            if (rd_varint(d, &pos, body_end, &hklen) < 0)
                return -1;
            if (hklen < 0)
                return -1;                /* negative header key size */
            if (hklen >= body_end - pos)
                return -1;                /* header extends past the record */
            pos += hklen;
            if (rd_varint(d, &pos, body_end, &hvlen) < 0)
                return -1;
            if (hvlen >= 0) {
                if (hvlen > body_end - pos)
                    return -1;            /* header value extends past the record */
                pos += hvlen;
            }
        }
    }
    if (pos != body_end)
        return -1;                        /* expected to read N bytes in record payload */
    if (__builtin_add_overflow(c->base_offset, (int64_t)off_delta, &r->offset))
        return -1;
    if (c->log_append_time)
        r->timestamp = c->max_timestamp;
    else if (__builtin_add_overflow(c->base_timestamp, ts_delta, &r->timestamp))
        return -1;
    if (c->base_sequence < 0) {
        r->sequence = -1;
    } else {
        int64_t seq = (int64_t)c->base_sequence + off_delta;   /* Kafka wraps past Int.MAX to 0 */
        if (seq > KL_INT_MAX)
            seq -= KL_INT_MAX + 1;
        r->sequence = seq;
    }
    c->pos = pos;
    return 1;
}

Py_ssize_t read_header(const uint8_t *d, Py_ssize_t pos, header_t *h) {
    /* only called on headers rcursor_next validated: the lengths are known to fit */
    int32_t n = 0;
    rd_varint(d, &pos, PY_SSIZE_T_MAX, &n);
    h->key_pos = pos;
    h->key_len = n;
    pos += n;
    rd_varint(d, &pos, PY_SSIZE_T_MAX, &n);
    h->value_pos = pos;
    h->value_len = n < 0 ? -1 : n;
    if (n > 0)
        pos += n;
    return pos;
}

/* --- decompression: in C (kafkalog_formats._native's codecs.c, through its capsule), else through the
 * Python decompressor ---------------------------------------------------------------------------------- */
static struct {
    int looked;
    PyObject *type;                          /* codecs.V2Decompressor */
    kl_fast_decompress_fn fn;
} v2;

int kl_v2_decompressor(PyObject *decompress, long long *bound) {
    if (!v2.looked) {
        v2.looked = 1;
        PyObject *m = PyImport_ImportModule("kafkalog_formats.codecs");
        v2.type = m ? PyObject_GetAttrString(m, "V2Decompressor") : NULL;
        Py_XDECREF(m);
        v2.fn = v2.type ? (kl_fast_decompress_fn)PyCapsule_Import(KL_DECOMPRESS_CAPSULE, 0) : NULL;
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_Exception)) {
                v2.looked = 0;
                return -1;
            }
            PyErr_Clear();                   /* not built here: the Python decompressor does it all */
        }
    }
    if (!v2.fn || !v2.type || Py_TYPE(decompress) != (PyTypeObject *)v2.type)
        return 0;
    PyObject *m = PyObject_GetAttrString(decompress, "max_output");
    if (!m)
        return -1;
    *bound = m == Py_None ? -1 : PyLong_AsLongLong(m);
    Py_DECREF(m);
    if (*bound == -1 && m != Py_None && PyErr_Occurred())
        return -1;
    return 1;
}

PyObject *call_decompress(PyObject *decompress, PyObject *bufobj, Py_ssize_t start, Py_ssize_t end, int codec) {
    long long bound;
    int v2c = kl_v2_decompressor(decompress, &bound);
    if (v2c > 0) {
        PyObject *out = v2.fn(codec, bufobj, start, end, bound);
        if (out)
            return out;
    }
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;
        PyErr_Clear();
    }
    PyObject *mv = PyMemoryView_FromObject(bufobj);
    if (!mv)
        goto fail;
    PyObject *view = PySequence_GetSlice(mv, start, end);
    PyObject *out = NULL;
    if (view) {
        out = PyObject_CallFunction(decompress, "iO", codec, view);
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        PyObject *r = PyObject_CallMethod(view, "release", NULL);
        if (r)
            Py_DECREF(r);
        else
            PyErr_Clear();                /* the decompressor kept a reference: the GC releases it */
        PyErr_Restore(exc_type, exc_value, exc_tb);
        Py_DECREF(view);
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyObject *r = PyObject_CallMethod(mv, "release", NULL);
    if (r)
        Py_DECREF(r);
    else
        PyErr_Clear();
    PyErr_Restore(exc_type, exc_value, exc_tb);
    Py_DECREF(mv);
    if (out)
        return out;
fail:
    if (PyErr_ExceptionMatches(PyExc_Exception))
        PyErr_Clear();                    /* FormatError or a binding's error: the pure path reports it */
    return NULL;
}
