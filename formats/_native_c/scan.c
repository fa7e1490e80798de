/* Batch walks over a mapped segment: columns for a range of batches (scan), Record tuples for one
 * batch (records), and verify's per-batch checks (verify_walk).
 *
 * Framing is message_set.BatchReader's (Kafka FileLogInputStream): <= 17 bytes left ends the walk,
 * size < 14 is corrupt, an entry longer than what is left is a partial entry, a v2 batch below 61 bytes
 * is corrupt. The C walk stops *at* such a position (STOP_FRAMING) and the wrapper lets BatchReader
 * describe it, so the reasons are the pure path's own.
 */
#include "native.h"

enum {
    SCAN_RECORDS = 1,        /* decode records into rows */
    SCAN_HEADERS = 2,        /* and their headers into header rows */
    SCAN_CRC = 4,            /* compute crc_valid */
    SCAN_STOP_BAD_CRC = 8,   /* a batch with a bad CRC goes to the pure path */
    SCAN_STOP_CONTROL = 16,  /* control batches go to the pure path */
    SCAN_DECOMPRESS = 32,    /* compressed batches: call decompress(codec, view); else pure path */
    SCAN_PAIRS = 64,         /* non-consecutive record offsets (dump-log's end-of-run report) */
};

typedef struct {
    Py_buffer view;
    const uint8_t *buf;
    Py_ssize_t len;
} inbuf;

static int get_inbuf(PyObject *obj, inbuf *b) {
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_SIMPLE) < 0)
        return -1;
    b->buf = (const uint8_t *)b->view.buf;
    b->len = b->view.len;
    return 0;
}

static int opt_i64(PyObject *o, int64_t *v, int *has) {
    if (o == NULL || o == Py_None) {
        *has = 0;
        *v = 0;
        return 0;
    }
    long long x = PyLong_AsLongLong(o);
    if (x == -1 && PyErr_Occurred())
        return -1;
    *has = 1;
    *v = x;
    return 0;
}

/* framing step at pos: returns 1 and the header when a v2 (magic >= 2) batch of >= 61 bytes starts
 * here, 2 for a legacy entry (magic < 2), 0 at a clean end, -1 for a framing stop */
int kl_frame(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, batch_hdr *h) {
    Py_ssize_t left = end - pos;
    if (left <= HEADER_SIZE_UP_TO_MAGIC)
        return left > 0 ? -1 : 0;
    int32_t size = rd_i32(buf + pos + 8);
    if (size < RECORD_OVERHEAD_V0)
        return -1;
    if (LOG_OVERHEAD + (int64_t)size > left)
        return -1;
    int8_t magic = (int8_t)buf[pos + 16];
    if (magic < 2 || LOG_OVERHEAD + (int64_t)size > NATIVE_MAX_BATCH)
        return 2;                         /* legacy entries and huge batches: the pure path */
    if (LOG_OVERHEAD + (int64_t)size < RECORD_BATCH_OVERHEAD)
        return -1;
    parse_batch_header(buf + pos, pos, h);
    return 1;
}

/* --- scan ----------------------------------------------------------------------------------------- */

typedef struct {
    gbuf batches, rows, hdrs;
    Py_ssize_t nrows, nhdrs;
    PyObject *sources;           /* [main buffer, decompressed buffers...] */
    PyObject *pairs;             /* [(previous, next)] or NULL */
    int64_t prev;
    int has_prev;
} scan_out;

/* decode a records section into rows; 1 ok, 0 invalid (rows rolled back by the caller), -1 error set */
static int decode_into(scan_out *o, const uint8_t *d, Py_ssize_t len, Py_ssize_t pos_base, const batch_hdr *h,
                       int flags, int64_t lo, int has_lo, int64_t hi, int has_hi, int64_t *decoded) {
    rcursor c;
    record_t r;
    int lat = (h->attributes & 0x08) != 0;
    if (rcursor_init(&c, d, len, h->count, h->base_offset, h->base_timestamp, h->base_sequence, lat,
                     h->max_timestamp) < 0)
        return 0;
    int64_t n = 0;
    Py_ssize_t hdrs0 = o->nhdrs;
    int st;
    while ((st = rcursor_next(&c, &r)) == 1) {
        n++;
        if ((has_lo && r.offset < lo) || (has_hi && r.offset > hi))
            continue;
        if ((flags & SCAN_HEADERS) && o->nhdrs - hdrs0 + r.header_count > NATIVE_MAX_HEADERS)
            return 0;                     /* rows of more headers than that: the pure path streams them */
        int64_t row[NR];
        row[R_OFFSET] = r.offset;
        row[R_TIMESTAMP] = r.timestamp;
        row[R_KEY_POS] = r.key_len < 0 ? -1 : pos_base + r.key_pos;
        row[R_KEY_LEN] = r.key_len;
        row[R_VALUE_POS] = r.value_len < 0 ? -1 : pos_base + r.value_pos;
        row[R_VALUE_LEN] = r.value_len;
        row[R_FIRST_HEADER] = o->nhdrs;
        row[R_HEADER_COUNT] = r.header_count;
        row[R_SEQUENCE] = r.sequence;
        row[R_ATTRIBUTES] = r.attributes;
        if (flags & SCAN_HEADERS) {
            Py_ssize_t hp = r.headers_pos;
            for (int32_t i = 0; i < r.header_count; i++) {
                header_t hd;
                hp = read_header(d, hp, &hd);
                int64_t hrow[NH] = {pos_base + hd.key_pos, hd.key_len, hd.value_len < 0 ? -1 : pos_base + hd.value_pos,
                                    hd.value_len};
                if (gbuf_put_i64s(&o->hdrs, hrow, NH) < 0)
                    return -1;
                o->nhdrs++;
            }
        } else {
            row[R_FIRST_HEADER] = -1;
        }
        if (gbuf_put_i64s(&o->rows, row, NR) < 0)
            return -1;
        o->nrows++;
    }
    *decoded = n;
    return st == 0 ? 1 : 0;
}

static void scan_out_clear(scan_out *o) {
    gbuf_clear(&o->batches);
    gbuf_clear(&o->rows);
    gbuf_clear(&o->hdrs);
    Py_CLEAR(o->sources);
    Py_CLEAR(o->pairs);
}

PyObject *kl_scan(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"buf", "start", "end", "flags", "decompress", "lo", "hi", "max_records",
                             "max_bytes", "prev_offset", "until", NULL};
    PyObject *bufobj, *decompress = Py_None, *lo_o = Py_None, *hi_o = Py_None, *prev_o = Py_None;
    Py_ssize_t start, end, max_records = 0, max_bytes = 0, until = PY_SSIZE_T_MAX;
    int flags;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Onni|OOOnnOn", kwlist, &bufobj, &start, &end, &flags,
                                     &decompress, &lo_o, &hi_o, &max_records, &max_bytes, &prev_o, &until))
        return NULL;
    int64_t lo, hi, prev;
    int has_lo, has_hi, has_prev;
    if (opt_i64(lo_o, &lo, &has_lo) < 0 || opt_i64(hi_o, &hi, &has_hi) < 0 || opt_i64(prev_o, &prev, &has_prev) < 0)
        return NULL;
    inbuf in;
    if (get_inbuf(bufobj, &in) < 0)
        return NULL;
    scan_out o = {0};
    o.prev = prev;
    o.has_prev = has_prev;
    if (end > in.len)
        end = in.len;
    if (start < 0)
        start = 0;
    if (gbuf_init(&o.batches, NULL, 0) < 0 || gbuf_init(&o.rows, NULL, 0) < 0 || gbuf_init(&o.hdrs, NULL, 0) < 0)
        goto error;
    o.sources = PyList_New(1);
    if (!o.sources)
        goto error;
    Py_INCREF(bufobj);
    PyList_SET_ITEM(o.sources, 0, bufobj);
    if (flags & SCAN_PAIRS) {
        o.pairs = PyList_New(0);
        if (!o.pairs)
            goto error;
    }
    Py_ssize_t pos = start;
    int reason = STOP_END;
    int64_t nbatches = 0, bytes = 0;
    for (;;) {
        if ((nbatches > 0 && ((max_records > 0 && o.nrows >= max_records) || (max_bytes > 0 && bytes >= max_bytes))) ||
            pos >= until) {
            reason = STOP_LIMIT;
            break;
        }
        batch_hdr h;
        int fr = kl_frame(in.buf, pos, end, &h);
        if (fr == 0) {
            reason = STOP_END;
            break;
        }
        if (fr < 0) {
            reason = STOP_FRAMING;
            break;
        }
        if (fr == 2 || h.magic != 2) {
            reason = STOP_PYTHON;
            break;
        }
        int64_t last;
        if (__builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last)) {
            reason = STOP_PYTHON;
            break;
        }
        if (has_lo && last < lo) {           /* dump-log --from-offset: skipped before any check */
            pos += h.size;
            continue;
        }
        if (has_hi && h.base_offset > hi) {
            reason = STOP_TO_OFFSET;
            break;
        }
        int codec = h.attributes & 7;
        if (codec > 4 || ((flags & SCAN_STOP_CONTROL) && (h.attributes & 0x20)) ||
            ((flags & SCAN_RECORDS) && h.count > NATIVE_MAX_RECORDS)) {
            reason = STOP_PYTHON;
            break;
        }
        int64_t crc_valid = -1;
        if (flags & SCAN_CRC) {
            crc_valid = kl_crc32c(0, in.buf + pos + CRC_START, (size_t)(h.size - CRC_START)) == h.crc;
            if (!crc_valid && (flags & SCAN_STOP_BAD_CRC)) {
                reason = STOP_PYTHON;
                break;
            }
        }
        Py_ssize_t rows_before = o.nrows, hdrs_before = o.nhdrs;
        Py_ssize_t rows_len = o.rows.len, hdrs_len = o.hdrs.len;
        int64_t source = 0, decoded = 0;
        if (flags & SCAN_RECORDS) {
            const uint8_t *d = in.buf + pos + RECORD_BATCH_OVERHEAD;
            Py_ssize_t dlen = (Py_ssize_t)(h.size - RECORD_BATCH_OVERHEAD);
            Py_ssize_t pos_base = pos + RECORD_BATCH_OVERHEAD;
            int ok;
            if (codec != 0) {
                if (!(flags & SCAN_DECOMPRESS) || decompress == Py_None) {
                    reason = STOP_PYTHON;
                    break;
                }
                PyObject *out = call_decompress(decompress, bufobj, pos + RECORD_BATCH_OVERHEAD, pos + h.size, codec);
                if (!out) {
                    if (PyErr_Occurred())
                        goto error;
                    reason = STOP_PYTHON;
                    break;
                }
                inbuf dec;
                if (get_inbuf(out, &dec) < 0) {
                    Py_DECREF(out);
                    goto error;
                }
                ok = decode_into(&o, dec.buf, dec.len, 0, &h, flags, lo, has_lo, hi, has_hi, &decoded);
                bytes += dec.len;
                PyBuffer_Release(&dec.view);
                if (ok == 1) {
                    source = PyList_GET_SIZE(o.sources);
                    if (PyList_Append(o.sources, out) < 0) {
                        Py_DECREF(out);
                        goto error;
                    }
                }
                Py_DECREF(out);
            } else {
                ok = decode_into(&o, d, dlen, pos_base, &h, flags, lo, has_lo, hi, has_hi, &decoded);
            }
            if (ok < 0)
                goto error;
            if (ok == 0) {                    /* roll back this batch's rows: the pure path decodes it */
                o.nrows = rows_before;
                o.nhdrs = hdrs_before;
                o.rows.len = rows_len;
                o.hdrs.len = hdrs_len;
                reason = STOP_PYTHON;
                break;
            }
            if (o.pairs) {
                const int64_t *rows = (const int64_t *)gbuf_ptr(&o.rows);
                for (Py_ssize_t i = rows_before; i < o.nrows; i++) {
                    int64_t off = rows[i * NR + R_OFFSET];
                    if (o.has_prev && (o.prev == INT64_MAX || off != o.prev + 1)) {
                        PyObject *t = Py_BuildValue("(LL)", (long long)o.prev, (long long)off);
                        if (!t || PyList_Append(o.pairs, t) < 0) {
                            Py_XDECREF(t);
                            goto error;
                        }
                        Py_DECREF(t);
                    }
                    o.prev = off;
                    o.has_prev = 1;
                }
            }
        }
        int64_t brow[NB] = {pos, h.size, h.base_offset, h.last_offset_delta, h.partition_leader_epoch, h.magic,
                            h.crc, h.attributes, h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch,
                            h.base_sequence, h.count, crc_valid, rows_before, o.nrows - rows_before, source,
                            decoded, hdrs_before};
        if (gbuf_put_i64s(&o.batches, brow, NB) < 0)
            goto error;
        nbatches++;
        bytes += h.size;
        pos += h.size;
    }
    PyBuffer_Release(&in.view);
    PyObject *b = gbuf_finish(&o.batches), *r = gbuf_finish(&o.rows), *hh = gbuf_finish(&o.hdrs);
    if (!b || !r || !hh) {
        Py_XDECREF(b);
        Py_XDECREF(r);
        Py_XDECREF(hh);
        scan_out_clear(&o);
        return NULL;
    }
    PyObject *prev_out = o.has_prev ? PyLong_FromLongLong(o.prev) : Py_NewRef(Py_None);
    PyObject *pairs = o.pairs ? o.pairs : Py_NewRef(Py_None);
    return Py_BuildValue("(niNNNNNN)", pos, reason, b, r, hh, o.sources, pairs, prev_out);
error:
    PyBuffer_Release(&in.view);
    scan_out_clear(&o);
    return NULL;
}

/* --- records(): Record tuples for one batch (BatchV2View.records' fast path) -------------------- */

/* one Record (a tuple subclass of 9 items: offset, timestamp, key, value, headers, sequence, attributes,
 * crc None, valid None) of a record the cursor decoded from ``d`` */
PyObject *kl_make_record(PyTypeObject *type, const uint8_t *d, const record_t *rp) {
    return kl_make_record_cached(type, d, rp, NULL);
}

/* kl_make_record, with the headers tuple of the previous record reused when this record's headers are the
 * same bytes (records are immutable: sharing an equal tuple changes nothing a reader can see, and saves
 * four objects a record when every record carries the same headers) */
/* the Python type of a record's headers beyond HeadersInline of them (record.RecordHeaders: their bytes and
 * count, decoded when iterated), set by set_record_headers; NULL: tuples whatever the count */
static PyObject *HeadersType = NULL;
static Py_ssize_t HeadersInline = 0;

PyObject *kl_set_record_headers(PyObject *self, PyObject *args) {
    PyObject *t;
    Py_ssize_t inline_max;
    if (!PyArg_ParseTuple(args, "O!n", &PyType_Type, &t, &inline_max))
        return NULL;
    Py_XSETREF(HeadersType, Py_NewRef(t));
    HeadersInline = inline_max;
    Py_RETURN_NONE;
}

/* the length of a validated record's headers: from the first header to the end of the record */
static Py_ssize_t headers_len(const uint8_t *d, const record_t *r) {
    Py_ssize_t hp = r->headers_pos;
    for (int32_t j = 0; j < r->header_count; j++) {
        header_t hd;
        hp = read_header(d, hp, &hd);
    }
    return hp - r->headers_pos;
}

/* (key bytes, value bytes or None) of one header; value_len < 0: null */
static PyObject *header_pair(const uint8_t *d, Py_ssize_t key_pos, Py_ssize_t key_len, Py_ssize_t value_pos,
                             Py_ssize_t value_len) {
    PyObject *k = PyBytes_FromStringAndSize((const char *)d + key_pos, key_len);
    PyObject *v = value_len < 0 ? Py_NewRef(Py_None)
                                : PyBytes_FromStringAndSize((const char *)d + value_pos, value_len);
    PyObject *pair = (k && v) ? PyTuple_Pack(2, k, v) : NULL;
    Py_XDECREF(k);
    Py_XDECREF(v);
    return pair;
}

/* HeadersType(bytes of the record's validated headers, count) */
static PyObject *headers_view(const uint8_t *d, const record_t *r) {
    PyObject *section = PyBytes_FromStringAndSize((const char *)d + r->headers_pos, headers_len(d, r));
    if (!section)
        return NULL;
    return PyObject_CallFunction(HeadersType, "(Ni)", section, (int)r->header_count);
}

/* header_pairs(section, pos, count) -> (list of (key, value) pairs, next pos): ``count`` headers of a
 * RecordHeaders' bytes from ``pos`` (RecordHeaders.chunks' fast path). Every length is checked against the
 * section (a section can come from anywhere, pickle included): ValueError if they do not fit. */
PyObject *kl_header_pairs(PyObject *self, PyObject *args) {
    Py_buffer in;
    Py_ssize_t pos, count;
    if (!PyArg_ParseTuple(args, "y*nn", &in, &pos, &count))
        return NULL;
    const uint8_t *d = (const uint8_t *)in.buf;
    Py_ssize_t end = in.len;
    PyObject *list = NULL;
    if (pos < 0 || count < 0 || pos > end)
        goto bad;
    list = PyList_New(count);
    if (!list)
        goto error;
    for (Py_ssize_t i = 0; i < count; i++) {
        int32_t kl, vl;
        if (rd_varint(d, &pos, end, &kl) < 0 || kl < 0 || kl > end - pos)
            goto bad;
        Py_ssize_t kp = pos;
        pos += kl;
        if (rd_varint(d, &pos, end, &vl) < 0 || (vl > 0 && vl > end - pos))
            goto bad;
        PyObject *pair = header_pair(d, kp, kl, pos, vl);
        if (!pair)
            goto error;
        PyList_SET_ITEM(list, i, pair);
        if (vl > 0)
            pos += vl;
    }
    PyBuffer_Release(&in);
    return Py_BuildValue("(Nn)", list, pos);
bad:
    PyErr_SetString(PyExc_ValueError, "record headers: a length runs past their bytes");
error:
    PyBuffer_Release(&in);
    Py_XDECREF(list);
    return NULL;
}

PyObject *kl_make_record_cached(PyTypeObject *type, const uint8_t *d, const record_t *rp, headers_cache *cache) {
    record_t r = *rp;
    Py_ssize_t hlen = 0;
    int many = HeadersType && r.header_count > HeadersInline;
    if (many)
        cache = NULL;
    if (cache && r.header_count > 0) {
        hlen = headers_len(d, &r);
        if (cache->headers && cache->count == r.header_count && cache->len == hlen &&
            memcmp(cache->bytes, d + r.headers_pos, (size_t)hlen) == 0) {
            PyObject *key = r.key_len < 0 ? Py_NewRef(Py_None)
                                           : PyBytes_FromStringAndSize((const char *)d + r.key_pos, r.key_len);
            PyObject *value = r.value_len < 0 ? Py_NewRef(Py_None)
                                               : PyBytes_FromStringAndSize((const char *)d + r.value_pos, r.value_len);
            PyObject *offset = PyLong_FromLongLong(r.offset);
            PyObject *ts = PyLong_FromLongLong(r.timestamp);
            PyObject *seq = PyLong_FromLongLong(r.sequence);
            PyObject *attrs = PyLong_FromLong(r.attributes);
            PyObject *rec = type->tp_alloc(type, 9);
            if (!key || !value || !offset || !ts || !seq || !attrs || !rec) {
                Py_XDECREF(key);
                Py_XDECREF(value);
                Py_XDECREF(offset);
                Py_XDECREF(ts);
                Py_XDECREF(seq);
                Py_XDECREF(attrs);
                Py_XDECREF(rec);
                return NULL;
            }
            PyTuple_SET_ITEM(rec, 0, offset);
            PyTuple_SET_ITEM(rec, 1, ts);
            PyTuple_SET_ITEM(rec, 2, key);
            PyTuple_SET_ITEM(rec, 3, value);
            PyTuple_SET_ITEM(rec, 4, Py_NewRef(cache->headers));
            PyTuple_SET_ITEM(rec, 5, seq);
            PyTuple_SET_ITEM(rec, 6, attrs);
            PyTuple_SET_ITEM(rec, 7, Py_NewRef(Py_None));
            PyTuple_SET_ITEM(rec, 8, Py_NewRef(Py_None));
            return rec;
        }
    }
    PyObject *key = r.key_len < 0 ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize((const char *)d + r.key_pos, r.key_len);
    PyObject *value = r.value_len < 0 ? Py_NewRef(Py_None)
                                       : PyBytes_FromStringAndSize((const char *)d + r.value_pos, r.value_len);
    PyObject *headers = many ? headers_view(d, &r) : PyTuple_New(r.header_count);
    PyObject *offset = PyLong_FromLongLong(r.offset);
    PyObject *ts = PyLong_FromLongLong(r.timestamp);
    PyObject *seq = PyLong_FromLongLong(r.sequence);
    PyObject *attrs = PyLong_FromLong(r.attributes);
    PyObject *rec = type->tp_alloc(type, 9);
    if (!key || !value || !headers || !offset || !ts || !seq || !attrs || !rec)
        goto fail;
    Py_ssize_t hp = r.headers_pos;
    for (int32_t j = 0; !many && j < r.header_count; j++) {
        header_t hd;
        hp = read_header(d, hp, &hd);
        PyObject *pair = header_pair(d, hd.key_pos, hd.key_len, hd.value_pos, hd.value_len);
        if (!pair)
            goto fail;
        PyTuple_SET_ITEM(headers, j, pair);
    }
    if (cache && r.header_count > 0 && hlen <= (Py_ssize_t)sizeof(cache->bytes)) {
        Py_XSETREF(cache->headers, Py_NewRef(headers));
        cache->count = r.header_count;
        cache->len = hlen;
        memcpy(cache->bytes, d + r.headers_pos, (size_t)hlen);
    }
    PyTuple_SET_ITEM(rec, 0, offset);
    PyTuple_SET_ITEM(rec, 1, ts);
    PyTuple_SET_ITEM(rec, 2, key);
    PyTuple_SET_ITEM(rec, 3, value);
    PyTuple_SET_ITEM(rec, 4, headers);
    PyTuple_SET_ITEM(rec, 5, seq);
    PyTuple_SET_ITEM(rec, 6, attrs);
    PyTuple_SET_ITEM(rec, 7, Py_NewRef(Py_None));
    PyTuple_SET_ITEM(rec, 8, Py_NewRef(Py_None));
    return rec;
fail:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(headers);
    Py_XDECREF(offset);
    Py_XDECREF(ts);
    Py_XDECREF(seq);
    Py_XDECREF(attrs);
    Py_XDECREF(rec);
    return NULL;
}

/* records(data, count, base_offset, base_timestamp, base_sequence, log_append_time, record_type,
 *         start=0, remaining=-1, limit=-1, validate=1)
 * Without ``limit``: the list of every record (None when the section is invalid).
 * With ``limit`` >= 0: one chunk, (list of at most ``limit`` records, next start, records remaining), the
 * cursor resumed at byte ``start`` with ``remaining`` records to go (-1: ``count``); the whole section
 * is validated first when ``validate`` (the first chunk), so a batch of millions of records is turned
 * into objects a chunk at a time (memory bounded by the chunk, not the batch). */
PyObject *kl_records(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"data", "count", "base_offset", "base_timestamp", "base_sequence",
                             "log_append_time", "record_type", "start", "remaining", "limit", "validate", NULL};
    PyObject *dataobj, *lat_o, *rtype;
    int count, base_sequence;
    long long base_offset, base_ts;
    Py_ssize_t start = 0, limit = -1;
    int remaining = -1, validate = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OiLLiOO|ninp", kwlist, &dataobj, &count, &base_offset, &base_ts,
                                     &base_sequence, &lat_o, &rtype, &start, &remaining, &limit, &validate))
        return NULL;
    if (!PyType_Check(rtype) || !PyType_IsSubtype((PyTypeObject *)rtype, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a tuple subclass");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)rtype;
    int64_t lat_ts = 0;
    int lat;
    if (opt_i64(lat_o, &lat_ts, &lat) < 0)
        return NULL;
    inbuf in;
    if (get_inbuf(dataobj, &in) < 0)
        return NULL;
    rcursor c;
    record_t r;
    PyObject *list = NULL;
    if (rcursor_init(&c, in.buf, in.len, count, base_offset, base_ts, base_sequence, lat, lat_ts) < 0)
        goto invalid;
    /* a first pass validates everything, so no object is made for a batch the pure path must report */
    int st;
    Py_ssize_t n = 0;
    if (validate || limit < 0) {
        while ((st = rcursor_next(&c, &r)) == 1)
            n++;
        if (st < 0)
            goto invalid;
    }
    rcursor_init(&c, in.buf, in.len, count, base_offset, base_ts, base_sequence, lat, lat_ts);
    if (limit >= 0) {                     /* one chunk, resumed where the previous one ended */
        if (start < 0 || start > in.len || remaining > count) {
            PyErr_SetString(PyExc_ValueError, "records: start or remaining outside the section");
            goto error;
        }
        c.pos = start;
        c.remaining = remaining < 0 ? count : remaining;
        n = c.remaining < limit ? c.remaining : limit;
    }
    list = PyList_New(n);
    if (!list)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (rcursor_next(&c, &r) != 1) {  /* only a section validated by an earlier chunk gets here */
            PyErr_SetString(PyExc_ValueError, "records: the section changed between chunks");
            goto error;
        }
        PyObject *rec = kl_make_record(type, in.buf, &r);
        if (!rec)
            goto error;
        PyList_SET_ITEM(list, i, rec);
    }
    PyBuffer_Release(&in.view);
    if (limit >= 0)
        return Py_BuildValue("(Nni)", list, c.pos, c.remaining);
    return list;
invalid:
    PyBuffer_Release(&in.view);
    Py_RETURN_NONE;
error:
    PyBuffer_Release(&in.view);
    Py_XDECREF(list);
    return NULL;
}

/* --- verify_walk: verify_segment's per-batch checks for batches that have no finding ------------ */

/* control records of a valid batch, as verify checks them (control.parse_control_key and
 * parse_end_txn_marker): 1 ok (ABORT markers appended), 0 a finding (pure path) */
static int check_control(const uint8_t *d, const record_t *r, int64_t producer_id, PyObject *aborts) {
    if (r->key_len < 4)
        return 0;
    int16_t version = rd_i16(d + r->key_pos), type = rd_i16(d + r->key_pos + 2);
    if (version < 0)
        return 0;
    if (type == 0 || type == 1) {
        if (r->value_len < 6 || rd_i16(d + r->value_pos) < 0)
            return 0;
        if (type == 0) {
            PyObject *t = Py_BuildValue("(LL)", (long long)r->offset, (long long)producer_id);
            if (!t || PyList_Append(aborts, t) < 0) {
                Py_XDECREF(t);
                return -1;
            }
            Py_DECREF(t);
        }
    }
    return 1;
}

/* records of one batch: offsets inside [base, last] and increasing, count as declared (verify's
 * _verify_records); 1 ok, 0 a finding, -1 error set */
static int check_records(const uint8_t *d, Py_ssize_t len, const batch_hdr *h, int64_t last, PyObject *aborts,
                         int64_t *n_out) {
    rcursor c;
    record_t r;
    int lat = (h->attributes & 0x08) != 0;
    if (rcursor_init(&c, d, len, h->count, h->base_offset, h->base_timestamp, h->base_sequence, lat,
                     h->max_timestamp) < 0)
        return 0;
    int64_t n = 0, prev = 0;
    int st, control = (h->attributes & 0x20) != 0;
    Py_ssize_t aborts_before = PyList_GET_SIZE(aborts);
    while ((st = rcursor_next(&c, &r)) == 1) {
        if (r.offset < h->base_offset || r.offset > last || (n > 0 && r.offset <= prev))
            goto finding;
        prev = r.offset;
        n++;
        if (control) {
            int ok = check_control(d, &r, h->producer_id, aborts);
            if (ok < 0)
                return -1;
            if (ok == 0)
                goto finding;
        }
    }
    if (st < 0 || n != h->count)
        goto finding;
    *n_out = n;
    return 1;
finding:
    if (PyList_SetSlice(aborts, aborts_before, PyList_GET_SIZE(aborts), NULL) < 0)
        return -1;
    return 0;
}

/* the batch table of verify_segment (see _BatchTable there): state fields, shared with Python */
enum { T_HAS_PREV, T_PREV_LAST, T_ROWS_SEEN, T_RUN_ALL, T_RUN_RECORDS, T_HAS_HMAX, T_HMAX, T_MONOTONIC, T_STATE };
enum { TR_POSITION, TR_LAST, TR_MAX_TS, TR_COUNT, TR_PREV_LAST, TR_RUN_ALL, TR_RUN_RECORDS, TR_BEFORE, TR_FIELDS };
#define NO_PREV INT64_MIN

/* first index of a sorted array whose value is > v (upper bound) or >= v (lower bound) */
static Py_ssize_t bound(const int64_t *a, Py_ssize_t n, int64_t v, int upper) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (upper ? a[mid] <= v : a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* where the named positions and offsets stand in a walk: batches come in position order, and in
 * increasing last-offset order while the log is monotonic, so both advance; a cursor is re-sought when
 * it would have to move back (a non-monotonic log, whose table is rebuilt full anyway) */
typedef struct {
    const int64_t *pos, *off;
    Py_ssize_t npos, noff, pc, oc;
    int full;
} interest_t;

/* one CRC-valid batch into the table: running maxima, and a row when the indexes name it (or always) */
static int table_add(int64_t *st, gbuf *rows, interest_t *it, int64_t pos, int64_t last, int64_t max_ts,
                     int64_t count) {
    int64_t prev_last = st[T_HAS_PREV] ? st[T_PREV_LAST] : NO_PREV;
    if (st[T_HAS_PREV] && last <= st[T_PREV_LAST])
        st[T_MONOTONIC] = 0;
    int64_t before = st[T_ROWS_SEEN] ? st[T_RUN_RECORDS] : -1;
    int64_t ts_records = count != 0 ? max_ts : -1;
    if (!st[T_ROWS_SEEN] || max_ts > st[T_RUN_ALL])
        st[T_RUN_ALL] = max_ts;
    if (!st[T_ROWS_SEEN] || ts_records > st[T_RUN_RECORDS])
        st[T_RUN_RECORDS] = ts_records;
    if (count != 0 && (!st[T_HAS_HMAX] || max_ts > st[T_HMAX])) {
        st[T_HAS_HMAX] = 1;
        st[T_HMAX] = max_ts;
    }
    st[T_ROWS_SEEN]++;
    st[T_HAS_PREV] = 1;
    st[T_PREV_LAST] = last;
    int keep = it->full;
    if (!keep && it->npos) {
        if (it->pc > 0 && it->pos[it->pc - 1] >= pos)
            it->pc = bound(it->pos, it->npos, pos, 0);
        while (it->pc < it->npos && it->pos[it->pc] < pos)
            it->pc++;
        keep = it->pc < it->npos && it->pos[it->pc] == pos;
    }
    if (!keep && it->noff) {            /* a named offset in (prev_last, last]: this is its batch */
        if (it->oc > 0 && it->off[it->oc - 1] > prev_last)
            it->oc = bound(it->off, it->noff, prev_last, 1);
        while (it->oc < it->noff && it->off[it->oc] <= prev_last)
            it->oc++;
        keep = it->oc < it->noff && it->off[it->oc] <= last;
    }
    if (!keep)
        return 0;
    int64_t row[TR_FIELDS] = {pos, last, max_ts, count, prev_last, st[T_RUN_ALL], st[T_RUN_RECORDS], before};
    return gbuf_put_i64s(rows, row, TR_FIELDS);
}

PyObject *kl_table_add(PyObject *self, PyObject *args) {
    PyObject *state_o, *rows_o, *pos_o, *off_o;
    long long pos, last, max_ts, count;
    if (!PyArg_ParseTuple(args, "OO!OOLLLL", &state_o, &PyByteArray_Type, &rows_o, &pos_o, &off_o, &pos, &last,
                          &max_ts, &count))
        return NULL;
    Py_buffer st, ip = {0}, io = {0};
    if (PyObject_GetBuffer(state_o, &st, PyBUF_WRITABLE) < 0)
        return NULL;
    int full = pos_o == Py_None;
    if (st.len < T_STATE * 8 || (!full && (PyObject_GetBuffer(pos_o, &ip, PyBUF_SIMPLE) < 0 ||
                                           PyObject_GetBuffer(off_o, &io, PyBUF_SIMPLE) < 0))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "bad table state");
        goto fail;
    }
    gbuf rows;
    if (gbuf_init(&rows, rows_o, 0) < 0)
        goto fail;
    interest_t it = {full ? NULL : ip.buf, full ? NULL : io.buf, full ? 0 : ip.len / 8, full ? 0 : io.len / 8, 0, 0,
                     full};
    int rc = table_add((int64_t *)st.buf, &rows, &it, pos, last, max_ts, count);
    if (PyByteArray_Resize(rows.ba, rows.len) < 0)
        rc = -1;
    gbuf_clear(&rows);
    PyBuffer_Release(&st);
    if (ip.obj)
        PyBuffer_Release(&ip);
    if (io.obj)
        PyBuffer_Release(&io);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
fail:
    PyBuffer_Release(&st);
    if (ip.obj)
        PyBuffer_Release(&ip);
    if (io.obj)
        PyBuffer_Release(&io);
    return NULL;
}

/* verify_walk: verify_segment._verify_log for the batches that have no finding.
 *
 * A batch is handled here only when none of _check_batch's rules, nor a bad CRC, nor (deep) a record
 * check applies; otherwise the walk stops before it (STOP_PYTHON) and the pure code reports it. The
 * batch table (state, rows) is updated in place, exactly as _BatchTable.add does. */
PyObject *kl_verify_walk(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"buf", "start", "end", "segment_base", "last", "first_seen", "max_message_bytes",
                             "deep", "decompress", "state", "rows", "positions", "offsets", "until", NULL};
    PyObject *bufobj, *last_o, *decompress, *state_o, *rows_o, *pos_o, *off_o;
    Py_ssize_t start, end, until = PY_SSIZE_T_MAX;
    long long seg_base, max_message_bytes;
    int first_seen, deep;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OnnLOpLpOOO!OO|n", kwlist, &bufobj, &start, &end, &seg_base, &last_o,
                                     &first_seen, &max_message_bytes, &deep, &decompress, &state_o,
                                     &PyByteArray_Type, &rows_o, &pos_o, &off_o, &until))
        return NULL;
    int64_t last;
    int has_last;
    if (opt_i64(last_o, &last, &has_last) < 0)
        return NULL;
    inbuf in, ip = {0}, io = {0};
    Py_buffer stv = {0};
    kl_scratch scratch = {0};
    int full = pos_o == Py_None;
    gbuf rows = {0};
    PyObject *aborts = NULL;
    if (get_inbuf(bufobj, &in) < 0)
        return NULL;
    if (PyObject_GetBuffer(state_o, &stv, PyBUF_WRITABLE) < 0)
        goto fail;
    if (stv.len < T_STATE * 8) {
        PyErr_SetString(PyExc_ValueError, "bad table state");
        goto fail;
    }
    if (!full && (get_inbuf(pos_o, &ip) < 0 || get_inbuf(off_o, &io) < 0))
        goto fail;
    if (end > in.len)
        end = in.len;
    aborts = PyList_New(0);
    if (!aborts || gbuf_init(&rows, rows_o, 0) < 0)
        goto fail;
    /* compressed batches: decompressed in C into one reused buffer when ``decompress`` lets C do it */
    long long dbound = -1;
    int v2c = deep && decompress != Py_None ? kl_v2_decompressor(decompress, &dbound) : 0;
    if (v2c < 0)
        goto fail;
    if (v2c > 0 && dbound < 0) {              /* the bound in force, read once a walk */
        PyObject *lim = PyImport_ImportModule("kafkalog_formats.limits");
        PyObject *v = lim ? PyObject_GetAttrString(lim, "_max_decompressed") : NULL;
        dbound = v ? PyLong_AsLongLong(v) : -1;
        Py_XDECREF(v);
        Py_XDECREF(lim);
        if (dbound < 0)
            goto fail;
    }
    int64_t *st = (int64_t *)stv.buf;
    int64_t codecs[5] = {0}, nbatches = 0, nrecords = 0, first_offset = 0, first_ts = 0, max_ts = 0, valid_end = -1;
    int has_first = 0, has_max = 0;
    int reason = STOP_END;
    Py_ssize_t pos = start;
    interest_t it = {full ? NULL : (const int64_t *)ip.buf, full ? NULL : (const int64_t *)io.buf,
                     full ? 0 : ip.len / 8, full ? 0 : io.len / 8, 0, 0, full};
    if (!full) {
        it.pc = bound(it.pos, it.npos, pos, 0);
        it.oc = bound(it.off, it.noff, st[T_HAS_PREV] ? st[T_PREV_LAST] : NO_PREV, 1);
    }
    for (;;) {
        if (pos >= until) {
            reason = STOP_LIMIT;
            break;
        }
        batch_hdr h;
        int fr = kl_frame(in.buf, pos, end, &h);
        if (fr == 0)
            break;
        if (fr < 0) {
            reason = STOP_FRAMING;
            break;
        }
        int64_t b_last, span;
        int codec = h.attributes & 7;
        if (fr == 2 || h.magic != 2 || codec > 4 ||
            __builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &b_last) ||
            h.size > max_message_bytes || b_last < h.base_offset ||
            (!first_seen && !has_first && h.base_offset < seg_base) ||
            (has_last && h.base_offset <= last) ||
            __builtin_sub_overflow(b_last, (int64_t)seg_base, &span) || span > KL_INT_MAX ||
            kl_crc32c(0, in.buf + pos + CRC_START, (size_t)(h.size - CRC_START)) != h.crc) {
            reason = STOP_PYTHON;
            break;
        }
        int64_t n = h.count;
        if (deep) {
            int ok;
            if (codec != 0) {
                if (decompress == Py_None) {
                    reason = STOP_PYTHON;
                    break;
                }
                size_t len;
                if (v2c > 0 && kl_decompress_scratch(codec, in.buf + pos + RECORD_BATCH_OVERHEAD,
                                                     (Py_ssize_t)(h.size - RECORD_BATCH_OVERHEAD), dbound, &scratch,
                                                     &len)) {
                    /* decompressed in C into the one buffer of the walk: checked, never kept */
                    ok = check_records(scratch.p, (Py_ssize_t)len, &h, b_last, aborts, &n);
                } else {
                    PyObject *out = call_decompress(decompress, bufobj, pos + RECORD_BATCH_OVERHEAD, pos + h.size, codec);
                    if (!out) {
                        if (PyErr_Occurred())
                            goto fail;
                        reason = STOP_PYTHON;
                        break;
                    }
                    inbuf dec;
                    if (get_inbuf(out, &dec) < 0) {
                        Py_DECREF(out);
                        goto fail;
                    }
                    ok = check_records(dec.buf, dec.len, &h, b_last, aborts, &n);
                    PyBuffer_Release(&dec.view);
                    Py_DECREF(out);
                }
            } else {
                ok = check_records(in.buf + pos + RECORD_BATCH_OVERHEAD, (Py_ssize_t)(h.size - RECORD_BATCH_OVERHEAD),
                                   &h, b_last, aborts, &n);
            }
            if (ok < 0)
                goto fail;
            if (ok == 0) {
                reason = STOP_PYTHON;
                break;
            }
        }
        codecs[codec]++;
        nrecords += n;
        if (!has_first) {
            has_first = 1;
            first_offset = h.base_offset;
            first_ts = h.max_timestamp;
        }
        if (!has_max || h.max_timestamp > max_ts) {
            has_max = 1;
            max_ts = h.max_timestamp;
        }
        if (table_add(st, &rows, &it, pos, b_last, h.max_timestamp, h.count) < 0)
            goto fail;
        nbatches++;
        last = b_last;
        has_last = 1;
        valid_end = pos + h.size;
        pos += h.size;
        if ((nbatches & 0xffff) == 0 && PyErr_CheckSignals() < 0)
            goto fail;
    }
    kl_scratch_free(&scratch);
    PyBuffer_Release(&in.view);
    PyBuffer_Release(&stv);
    if (!full) {
        PyBuffer_Release(&ip.view);
        PyBuffer_Release(&io.view);
    }
    if (PyByteArray_Resize(rows.ba, rows.len) < 0) {
        gbuf_clear(&rows);
        Py_DECREF(aborts);
        return NULL;
    }
    gbuf_clear(&rows);
    PyObject *first = has_first ? Py_BuildValue("(LL)", (long long)first_offset, (long long)first_ts)
                                : Py_NewRef(Py_None);
    PyObject *max_out = has_max ? PyLong_FromLongLong(max_ts) : Py_NewRef(Py_None);
    PyObject *last_out = has_last ? PyLong_FromLongLong(last) : Py_NewRef(Py_None);
    return Py_BuildValue("(niLL(LLLLL)NNNLN)", pos, reason, (long long)nbatches, (long long)nrecords,
                         (long long)codecs[0], (long long)codecs[1], (long long)codecs[2], (long long)codecs[3],
                         (long long)codecs[4], first, max_out, last_out, (long long)valid_end, aborts);
fail:
    kl_scratch_free(&scratch);
    if (rows.ba) {
        if (PyByteArray_Resize(rows.ba, rows.len) < 0)
            PyErr_Clear();
        gbuf_clear(&rows);
    }
    Py_XDECREF(aborts);
    PyBuffer_Release(&in.view);
    if (stv.obj)
        PyBuffer_Release(&stv);
    if (ip.view.obj)
        PyBuffer_Release(&ip.view);
    if (io.view.obj)
        PyBuffer_Release(&io.view);
    return NULL;
}

/* batch_sound(buf, position, decompress) -> True when the batch at ``position`` is a v2 data batch whose
 * CRC matches and whose records section decodes whole (preflight.batch_problem finds nothing in it);
 * None: the pure check decides (it reports whatever is wrong). For batches too large for the columns
 * scan's rows (millions of records): validated record by record, nothing kept. */
PyObject *kl_batch_sound(PyObject *self, PyObject *args) {
    PyObject *bufobj, *decompress;
    Py_ssize_t position;
    if (!PyArg_ParseTuple(args, "OnO", &bufobj, &position, &decompress))
        return NULL;
    section_t s;
    int has_horizon;
    long long horizon;
    int ok = batch_section(bufobj, position, decompress, &s, &has_horizon, &horizon);
    if (ok <= 0) {
        section_release(&s);
        return ok == 0 ? Py_NewRef(Py_None) : NULL;
    }
    const uint8_t *p = (const uint8_t *)s.data.buf + position;
    int64_t size = LOG_OVERHEAD + (int64_t)rd_i32(p + 8);
    uint32_t crc = kl_crc32c(0, p + CRC_START, (size_t)(size - CRC_START));
    Py_ssize_t n;
    int sound = crc == rd_u32(p + 17) && section_validate(&s, &n);
    section_release(&s);
    return sound ? Py_NewRef(Py_True) : Py_NewRef(Py_None);
}
