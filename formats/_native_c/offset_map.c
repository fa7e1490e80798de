/* The cleaner's offset map in C (repair/cleaner.OffsetMap: Kafka's SkimpyOffsetMap as MD5(key) -> offset
 * with its capacity rule), and the two per-record passes of compact over a v2 records section:
 *
 *   map_put(map, data, ...)   the offset-map build: every keyed record at or above the first dirty offset
 *   keep_mask(map, data, ...) the cleaning decision of cleaner._keep_record for every record of a batch
 *
 * Both validate the whole section before touching anything (an invalid batch goes to the pure path,
 * which must see the map exactly as a pure run would). Memory grows with the number of distinct keys,
 * never with the configured dedupe buffer.
 */
#include "native.h"
#include "structmember.h"

typedef struct {
    uint8_t digest[16];
    int64_t offset;
    int64_t used;
} slot_t;

typedef struct {
    PyObject_HEAD
    slot_t *table;
    Py_ssize_t cap;              /* power of two */
    Py_ssize_t count;
    long long slots;
    double load_factor;
    long long latest_offset;
    int full;
} OffsetMapObject;

static uint64_t digest_hash(const uint8_t *d) {
    uint64_t h;
    memcpy(&h, d, 8);
    return h;
}

static slot_t *lookup(OffsetMapObject *m, const uint8_t *d) {
    Py_ssize_t mask = m->cap - 1, i = (Py_ssize_t)(digest_hash(d) & (uint64_t)mask);
    for (;;) {
        slot_t *s = &m->table[i];
        if (!s->used || memcmp(s->digest, d, 16) == 0)
            return s;
        i = (i + 1) & mask;
    }
}

static int grow(OffsetMapObject *m) {
    Py_ssize_t ncap = m->cap ? m->cap * 2 : 1024;
    slot_t *old = m->table;
    Py_ssize_t ocap = m->cap;
    m->table = PyMem_Calloc((size_t)ncap, sizeof(slot_t));
    if (!m->table) {
        m->table = old;
        PyErr_NoMemory();
        return -1;
    }
    m->cap = ncap;
    for (Py_ssize_t i = 0; i < ocap; i++)
        if (old[i].used)
            *lookup(m, old[i].digest) = old[i];
    PyMem_Free(old);
    return 0;
}

static long long max_entries(OffsetMapObject *m) { return (long long)((double)m->slots * m->load_factor); }

/* cleaner.OffsetMap.put: refuses (and marks the map full) once it holds max_entries, even for a key it
 * already has */
static int put_digest(OffsetMapObject *m, const uint8_t *d, int64_t offset) {
    if (m->count >= max_entries(m)) {
        m->full = 1;
        return 0;
    }
    if ((m->count + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    slot_t *s = lookup(m, d);
    if (!s->used) {
        memcpy(s->digest, d, 16);
        s->used = 1;
        m->count++;
    }
    s->offset = offset;
    m->latest_offset = offset;          /* SkimpyOffsetMap.put sets latestOffset (cleaner.OffsetMap.put) */
    return 1;
}

static int64_t get_digest(OffsetMapObject *m, const uint8_t *d) {
    if (!m->cap)
        return -1;
    slot_t *s = lookup(m, d);
    return s->used ? s->offset : -1;
}

static int OffsetMap_init(OffsetMapObject *m, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"slots", "load_factor", NULL};
    long long slots;
    double lf = 0.9;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|d", kwlist, &slots, &lf))
        return -1;
    PyMem_Free(m->table);
    m->table = NULL;
    m->cap = m->count = 0;
    m->slots = slots;
    m->load_factor = lf;
    m->latest_offset = -1;
    m->full = 0;
    return 0;
}

static void OffsetMap_dealloc(OffsetMapObject *m) {
    PyMem_Free(m->table);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyObject *OffsetMap_put(OffsetMapObject *m, PyObject *args) {
    Py_buffer key;
    long long offset;
    if (!PyArg_ParseTuple(args, "y*L", &key, &offset))
        return NULL;
    uint8_t d[16];
    kl_md5(key.buf, (size_t)key.len, d);
    PyBuffer_Release(&key);
    int rc = put_digest(m, d, offset);
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

static PyObject *OffsetMap_get(OffsetMapObject *m, PyObject *args) {
    Py_buffer key;
    if (!PyArg_ParseTuple(args, "y*", &key))
        return NULL;
    uint8_t d[16];
    kl_md5(key.buf, (size_t)key.len, d);
    PyBuffer_Release(&key);
    return PyLong_FromLongLong(get_digest(m, d));
}

static Py_ssize_t OffsetMap_len(OffsetMapObject *m) { return m->count; }

static PyObject *OffsetMap_max_entries(OffsetMapObject *m, void *closure) {
    return PyLong_FromLongLong(max_entries(m));
}

static PyObject *OffsetMap_get_full(OffsetMapObject *m, void *closure) { return PyBool_FromLong(m->full); }

static int OffsetMap_set_full(OffsetMapObject *m, PyObject *v, void *closure) {
    int b = v ? PyObject_IsTrue(v) : 0;
    if (b < 0)
        return -1;
    m->full = b;
    return 0;
}

static PyMethodDef OffsetMap_methods[] = {
    {"put", (PyCFunction)OffsetMap_put, METH_VARARGS, "put(key, offset) -> bool: False (and full) at capacity"},
    {"get", (PyCFunction)OffsetMap_get, METH_VARARGS, "get(key) -> offset, or -1"},
    {NULL}};

static PyMemberDef OffsetMap_members[] = {
    {"slots", T_LONGLONG, offsetof(OffsetMapObject, slots), READONLY, NULL},
    {"load_factor", T_DOUBLE, offsetof(OffsetMapObject, load_factor), READONLY, NULL},
    {"latest_offset", T_LONGLONG, offsetof(OffsetMapObject, latest_offset), 0, NULL},
    {NULL}};

static PyGetSetDef OffsetMap_getset[] = {
    {"max_entries", (getter)OffsetMap_max_entries, NULL, NULL, NULL},
    {"full", (getter)OffsetMap_get_full, (setter)OffsetMap_set_full, NULL, NULL},
    {NULL}};

static PySequenceMethods OffsetMap_seq = {.sq_length = (lenfunc)OffsetMap_len};

PyTypeObject OffsetMapType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalog_formats._native.OffsetMap",
    .tp_basicsize = sizeof(OffsetMapObject),
    .tp_dealloc = (destructor)OffsetMap_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "MD5(key) -> offset with cleaner.OffsetMap's capacity rule",
    .tp_methods = OffsetMap_methods,
    .tp_members = OffsetMap_members,
    .tp_getset = OffsetMap_getset,
    .tp_as_sequence = &OffsetMap_seq,
    .tp_init = (initproc)OffsetMap_init,
    .tp_new = PyType_GenericNew,
};

/* --- per-batch passes ------------------------------------------------------------------------------- */

typedef struct {
    Py_buffer data;              /* what the bytes belong to (released by section_release) */
    PyObject *owner;             /* a decompressed section, or NULL */
    const uint8_t *d;
    Py_ssize_t len;
    rcursor c;
    int32_t count;
    long long base_offset, base_ts, max_ts;
    int base_seq, lat;
} section_t;

static void section_release(section_t *s) {
    if (s->data.obj)
        PyBuffer_Release(&s->data);
    Py_CLEAR(s->owner);
}

static int section_args(PyObject *dataobj, int count, long long base_offset, long long base_ts, int base_seq,
                        PyObject *lat_o, section_t *s) {
    s->lat = lat_o != Py_None;
    s->max_ts = 0;
    if (s->lat) {
        s->max_ts = PyLong_AsLongLong(lat_o);
        if (s->max_ts == -1 && PyErr_Occurred())
            return -1;
    }
    s->owner = NULL;
    if (PyObject_GetBuffer(dataobj, &s->data, PyBUF_SIMPLE) < 0)
        return -1;
    s->d = s->data.buf;
    s->len = s->data.len;
    s->count = count;
    s->base_offset = base_offset;
    s->base_ts = base_ts;
    s->base_seq = base_seq;
    return 0;
}

static int section_start(section_t *s) {
    return rcursor_init(&s->c, s->d, s->len, s->count, s->base_offset, s->base_ts, s->base_seq, s->lat,
                        s->max_ts);
}


/* the records section of the v2 data batch at ``position`` of ``bufobj`` (header parsed here, compressed
 * records through ``decompress``): 1 ok, 0 the pure path decides (not a v2 data batch, the bytes do not
 * hold it, decompression failed), -1 error set */
static int batch_section(PyObject *bufobj, Py_ssize_t position, PyObject *decompress, section_t *s,
                         int *has_horizon, long long *horizon) {
    memset(s, 0, sizeof(*s));
    if (PyObject_GetBuffer(bufobj, &s->data, PyBUF_SIMPLE) < 0)
        return -1;
    const uint8_t *buf = s->data.buf;
    if (position < 0 || position > s->data.len - RECORD_BATCH_OVERHEAD)
        return 0;
    batch_hdr h;
    parse_batch_header(buf + position, position, &h);
    int codec = h.attributes & 7;
    if (h.magic != 2 || (h.attributes & 0x20) || codec > 4 || h.size < RECORD_BATCH_OVERHEAD ||
        h.size > s->data.len - position || h.size > NATIVE_MAX_BATCH || h.count > NATIVE_MAX_RECORDS)
        return 0;
    s->count = h.count;
    s->base_offset = h.base_offset;
    s->base_ts = h.base_timestamp;
    s->base_seq = h.base_sequence;
    s->lat = (h.attributes & 0x08) != 0;
    s->max_ts = h.max_timestamp;
    *has_horizon = (h.attributes & 0x40) != 0;
    *horizon = h.base_timestamp;
    if (codec == 0) {
        s->d = buf + position + RECORD_BATCH_OVERHEAD;
        s->len = (Py_ssize_t)(h.size - RECORD_BATCH_OVERHEAD);
        return 1;
    }
    if (decompress == Py_None)
        return 0;
    PyObject *out = call_decompress(decompress, bufobj, position + RECORD_BATCH_OVERHEAD, position + h.size, codec);
    if (!out)
        return PyErr_Occurred() ? -1 : 0;
    Py_buffer v;
    if (PyObject_GetBuffer(out, &v, PyBUF_SIMPLE) < 0) {
        Py_DECREF(out);
        return -1;
    }
    s->d = v.buf;                /* ``out`` is immutable bytes or a bytearray nobody else holds */
    s->len = v.len;
    PyBuffer_Release(&v);
    s->owner = out;
    return 1;
}

/* the records of a validated section, and the MD5 of the keys that ``want`` selects (hashed in groups) */
typedef struct {
    record_t *recs;
    uint8_t *digests;            /* 16 bytes per record; only selected ones filled */
    Py_ssize_t n;
} hashed_t;

static void hashed_free(hashed_t *h) {
    PyMem_Free(h->recs);
    PyMem_Free(h->digests);
}

static int hash_section(section_t *s, hashed_t *h, int mode, int64_t bound) {
    /* mode 0 (map build): keyed records at or above ``bound``; mode 1 (cleaning): keyed records at or
     * below ``bound`` (the map's latest offset) */
    /* a batch declaring more than NATIVE_MAX_RECORDS records goes to the pure path, which streams it
     * (the tables below take about 130 bytes a record) */
    if (s->count > NATIVE_MAX_RECORDS) {
        memset(h, 0, sizeof(*h));
        return 0;
    }
    /* a record takes at least 7 bytes: a count beyond that is invalid, and never sizes an allocation */
    Py_ssize_t cap = s->count > 0 ? s->count : 0;
    if (cap > s->len / 7 + 1)
        cap = s->len / 7 + 1;
    h->recs = PyMem_Malloc(sizeof(record_t) * (size_t)(cap ? cap : 1));
    h->digests = PyMem_Malloc(16 * (size_t)(cap ? cap : 1));
    const uint8_t **ptrs = PyMem_Malloc(sizeof(uint8_t *) * (size_t)(cap ? cap : 1));
    size_t *lens = PyMem_Malloc(sizeof(size_t) * (size_t)(cap ? cap : 1));
    Py_ssize_t *where = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(cap ? cap : 1));
    uint8_t *tmp = PyMem_Malloc(16 * (size_t)(cap ? cap : 1));
    if (!h->recs || !h->digests || !ptrs || !lens || !where || !tmp) {
        PyMem_Free(ptrs);
        PyMem_Free(lens);
        PyMem_Free(where);
        PyMem_Free(tmp);
        hashed_free(h);
        PyErr_NoMemory();
        return -1;
    }
    int valid = section_start(s) == 0;
    const uint8_t *d = s->d;
    Py_ssize_t n = 0, k = 0;
    int st = 0;
    while (valid && (st = rcursor_next(&s->c, &h->recs[n < cap ? n : 0])) == 1) {
        if (n >= cap) {                 /* more records than declared: invalid (the cursor stops at count) */
            valid = 0;
            break;
        }
        record_t *r = &h->recs[n];
        if (r->key_len >= 0 && (mode == 0 ? r->offset >= bound : r->offset <= bound)) {
            ptrs[k] = d + r->key_pos;
            lens[k] = (size_t)r->key_len;
            where[k++] = n;
        }
        n++;
    }
    h->n = n;
    if (!valid || st < 0) {             /* the pure path reports the section (nothing was put) */
        PyMem_Free(ptrs);
        PyMem_Free(lens);
        PyMem_Free(where);
        PyMem_Free(tmp);
        hashed_free(h);
        return 0;
    }
    kl_md5_many(ptrs, lens, (size_t)k, tmp);
    for (Py_ssize_t i = 0; i < k; i++)
        memcpy(h->digests + 16 * where[i], tmp + 16 * i, 16);
    PyMem_Free(ptrs);
    PyMem_Free(lens);
    PyMem_Free(where);
    PyMem_Free(tmp);
    return 1;
}

/* map_put(map, data, count, base_offset, base_timestamp, base_sequence, log_append_time, first_dirty)
 * -> 1 every keyed record at or above first_dirty put; 0 the map filled up (build_offset_map stops);
 *    None: the section is invalid (pure path) */
static PyObject *map_put_core(OffsetMapObject *m, section_t *s, long long first_dirty) {
    hashed_t hs;
    int hv = hash_section(s, &hs, 0, first_dirty);
    if (hv <= 0) {
        if (hv < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    int result = 1;
    for (Py_ssize_t i = 0; i < hs.n; i++) {
        const record_t *r = &hs.recs[i];
        if (r->key_len < 0 || r->offset < first_dirty)
            continue;
        int rc = put_digest(m, hs.digests + 16 * i, r->offset);
        if (rc < 0) {
            hashed_free(&hs);
            return NULL;
        }
        if (rc == 0) {
            result = 0;
            break;
        }
    }
    hashed_free(&hs);
    return PyLong_FromLong(result);
}

PyObject *kl_map_put(PyObject *self, PyObject *args) {
    PyObject *mobj, *dataobj, *lat_o;
    int count, base_seq;
    long long base_offset, base_ts, first_dirty;
    if (!PyArg_ParseTuple(args, "O!OiLLiOL", &OffsetMapType, &mobj, &dataobj, &count, &base_offset, &base_ts,
                          &base_seq, &lat_o, &first_dirty))
        return NULL;
    section_t s;
    if (section_args(dataobj, count, base_offset, base_ts, base_seq, lat_o, &s) < 0)
        return NULL;
    PyObject *r = map_put_core((OffsetMapObject *)mobj, &s, first_dirty);
    section_release(&s);
    return r;
}

/* map_put_batch(map, buf, position, first_dirty, decompress): map_put for the batch at ``position``, its
 * header read here (None also when it is not a v2 data batch) */
PyObject *kl_map_put_batch(PyObject *self, PyObject *args) {
    PyObject *mobj, *bufobj, *decompress;
    Py_ssize_t position;
    long long first_dirty;
    if (!PyArg_ParseTuple(args, "O!OnLO", &OffsetMapType, &mobj, &bufobj, &position, &first_dirty, &decompress))
        return NULL;
    section_t s;
    int has_horizon;
    long long horizon;
    int ok = batch_section(bufobj, position, decompress, &s, &has_horizon, &horizon);
    PyObject *r = ok > 0 ? map_put_core((OffsetMapObject *)mobj, &s, first_dirty) : ok == 0 ? Py_NewRef(Py_None) : NULL;
    section_release(&s);
    return r;
}

/* keep_mask(map, data, count, base_offset, base_timestamp, base_sequence, log_append_time, delete_horizon,
 *           now) -> (mask bytes, kept, kept_tombstones) for a v2 data batch (cleaner._keep_record);
 *           None: the section is invalid (pure path) */
static int keep_decide(OffsetMapObject *m, section_t *s, int has_horizon, long long horizon, long long now,
                       gbuf *mask, long long *n_out, long long *kept_out, long long *tombstones_out) {
    /* cleaner._keep_record for every record of the section: 1 decided (one byte per record into ``mask``
     * when given), 0 the section is invalid (pure path), -1 error set */
    hashed_t hs;
    int hv = hash_section(s, &hs, 1, m->latest_offset);
    if (hv <= 0)
        return hv;
    if (mask && gbuf_init(mask, NULL, hs.n) < 0) {
        hashed_free(&hs);
        return -1;
    }
    long long kept = 0, tombstones = 0;
    for (Py_ssize_t i = 0; i < hs.n; i++) {
        const record_t *r = &hs.recs[i];
        int keep;
        if (r->offset > m->latest_offset)
            keep = 1;
        else if (r->key_len < 0)
            keep = 0;
        else if (r->offset < get_digest(m, hs.digests + 16 * i))
            keep = 0;
        else if (r->value_len >= 0)
            keep = 1;
        else
            keep = !has_horizon || now < horizon;
        uint8_t k = (uint8_t)keep;
        if (mask && gbuf_put(mask, &k, 1) < 0) {
            hashed_free(&hs);
            gbuf_clear(mask);
            return -1;
        }
        kept += keep;
        tombstones += keep && r->value_len < 0;
    }
    *n_out = hs.n;
    hashed_free(&hs);
    *kept_out = kept;
    *tombstones_out = tombstones;
    return 1;
}

static PyObject *keep_core(OffsetMapObject *m, section_t *s, int has_horizon, long long horizon, long long now) {
    gbuf mask;
    long long n, kept, tombstones;
    int rc = keep_decide(m, s, has_horizon, horizon, now, &mask, &n, &kept, &tombstones);
    if (rc <= 0) {
        if (rc < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *mb = gbuf_finish(&mask);
    if (!mb)
        return NULL;
    return Py_BuildValue("(NLL)", mb, kept, tombstones);
}

PyObject *kl_keep_mask(PyObject *self, PyObject *args) {
    PyObject *mobj, *dataobj, *lat_o, *horizon_o;
    int count, base_seq;
    long long base_offset, base_ts, now;
    if (!PyArg_ParseTuple(args, "O!OiLLiOOL", &OffsetMapType, &mobj, &dataobj, &count, &base_offset, &base_ts,
                          &base_seq, &lat_o, &horizon_o, &now))
        return NULL;
    int has_horizon = horizon_o != Py_None;
    long long horizon = 0;
    if (has_horizon) {
        horizon = PyLong_AsLongLong(horizon_o);
        if (horizon == -1 && PyErr_Occurred())
            return NULL;
    }
    section_t s;
    if (section_args(dataobj, count, base_offset, base_ts, base_seq, lat_o, &s) < 0)
        return NULL;
    PyObject *r = keep_core((OffsetMapObject *)mobj, &s, has_horizon, horizon, now);
    section_release(&s);
    return r;
}

/* keep_batch(map, buf, position, now, decompress): keep_mask for the batch at ``position`` (its delete
 * horizon from its header) */
PyObject *kl_keep_batch(PyObject *self, PyObject *args) {
    PyObject *mobj, *bufobj, *decompress;
    Py_ssize_t position;
    long long now;
    if (!PyArg_ParseTuple(args, "O!OnLO", &OffsetMapType, &mobj, &bufobj, &position, &now, &decompress))
        return NULL;
    section_t s;
    int has_horizon;
    long long horizon;
    int ok = batch_section(bufobj, position, decompress, &s, &has_horizon, &horizon);
    PyObject *r = ok > 0 ? keep_core((OffsetMapObject *)mobj, &s, has_horizon, horizon, now) : ok == 0 ? Py_NewRef(Py_None) : NULL;
    section_release(&s);
    return r;
}

/* a walk over consecutive batches (map_put_run, clean_run): the buffer, where the walk is, why it stopped
 * and the largest last offset of the batches it took */
typedef struct {
    Py_buffer view;
    const uint8_t *buf;
    Py_ssize_t pos, begin, end;
    const char *reason;
    int64_t max_last;
    int has_last;
} run_t;

static int run_open(run_t *r, PyObject *bufobj, Py_ssize_t start, Py_ssize_t end) {
    if (PyObject_GetBuffer(bufobj, &r->view, PyBUF_SIMPLE) < 0)
        return -1;
    r->buf = r->view.buf;
    r->end = end > r->view.len ? r->view.len : end;
    r->pos = r->begin = start < 0 ? 0 : start;
    r->reason = "end";
    r->max_last = 0;
    r->has_last = 0;
    return 0;
}

static void run_took(run_t *r, int64_t last) {
    if (!r->has_last || last > r->max_last)
        r->max_last = last;
    r->has_last = 1;
}

/* the largest last offset taken, or None; the buffer released */
static PyObject *run_close(run_t *r) {
    PyBuffer_Release(&r->view);
    return r->has_last ? PyLong_FromLongLong(r->max_last) : Py_NewRef(Py_None);
}

/* the next batch of a run at its position: 1, its header in ``h``, when a whole v2 batch the compiled
 * path may decode starts there; 0 when the run stops, ``reason`` saying why: "limit" (max_bytes read since
 * the start), "end" (the bytes ended), "python" (anything else: the pure code reads it) */
static int run_next(run_t *r, Py_ssize_t max_bytes, batch_hdr *h) {
    if (max_bytes > 0 && r->pos - r->begin >= max_bytes) {
        r->reason = "limit";
        return 0;
    }
    Py_ssize_t left = r->end - r->pos;
    const uint8_t *p = r->buf + r->pos;
    int32_t size = left > HEADER_SIZE_UP_TO_MAGIC ? rd_i32(p + 8) : 0;
    if (left <= HEADER_SIZE_UP_TO_MAGIC || size < RECORD_OVERHEAD_V0 || LOG_OVERHEAD + (int64_t)size > left ||
        (int8_t)p[16] != 2 || LOG_OVERHEAD + (int64_t)size < RECORD_BATCH_OVERHEAD ||
        LOG_OVERHEAD + (int64_t)size > NATIVE_MAX_BATCH) {
        r->reason = left > 0 ? "python" : "end";
        return 0;
    }
    parse_batch_header(p, r->pos, h);
    return 1;
}

/* map_put_run(map, buf, start, end, first_dirty, first_uncleanable, decompress, max_bytes)
 *   -> (position, reason, max last offset or None)
 * build_offset_map's loop over consecutive non-transactional v2 data batches: a batch starting at or above
 * the first uncleanable offset ends the segment ("uncleanable"), keyed records at or above first_dirty go
 * into the map (a full map: "full", the build ends), and the map's latest offset follows each batch ending
 * at or above first_dirty. Any other batch (legacy, control, transactional, undecodable, framing) stops
 * the run before it ("python"); "end": the bytes ended; "limit": max_bytes read. */
PyObject *kl_map_put_run(PyObject *self, PyObject *args) {
    PyObject *mobj, *bufobj, *decompress;
    Py_ssize_t start, end, max_bytes;
    long long first_dirty, first_uncleanable;
    if (!PyArg_ParseTuple(args, "O!OnnLLOn", &OffsetMapType, &mobj, &bufobj, &start, &end, &first_dirty,
                          &first_uncleanable, &decompress, &max_bytes))
        return NULL;
    OffsetMapObject *m = (OffsetMapObject *)mobj;
    run_t r;
    if (run_open(&r, bufobj, start, end) < 0)
        return NULL;
    for (;;) {
        batch_hdr h;
        if (!run_next(&r, max_bytes, &h))
            break;
        int64_t last;
        if (h.base_offset >= first_uncleanable) {
            r.reason = "uncleanable";
            break;
        }
        if ((h.attributes & 0x30) || (h.attributes & 7) > 4 ||
            __builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last)) {
            r.reason = "python";
            break;
        }
        section_t s;
        int has_horizon;
        long long horizon;
        int ok = batch_section(bufobj, r.pos, decompress, &s, &has_horizon, &horizon);
        PyObject *res = ok > 0 ? map_put_core(m, &s, first_dirty) : ok == 0 ? Py_NewRef(Py_None) : NULL;
        section_release(&s);
        if (!res) {
            PyBuffer_Release(&r.view);     /* the error stays set */
            return NULL;
        }
        int verdict = res == Py_None ? -1 : (int)PyLong_AsLong(res);
        Py_DECREF(res);
        if (verdict < 0) {                 /* the pure loop reports or decodes it */
            r.reason = "python";
            break;
        }
        run_took(&r, last);
        if (verdict == 0) {                /* full: build_offset_map returns the map as it is */
            r.reason = "full";
            break;
        }
        if (last >= first_dirty)
            m->latest_offset = last;
        r.pos += h.size;
    }
    PyObject *ml = run_close(&r);
    return ml ? Py_BuildValue("(nsN)", r.pos, r.reason, ml) : NULL;
}

/* clean_run(map, buf, start, end, now, upper_bound, decompress, max_bytes)
 *   -> (position, reason, batches, bytes, records, max last offset or None)
 * cleaner.clean_batches over consecutive v2 data batches that nothing of the cleaning can keep: not
 * transactional, no producer id (no producer state to keep an empty batch for), not the batch ending just
 * below the first uncleanable offset (``upper_bound``), no record kept by the offset map. Those are
 * dropped and counted; the first other batch stops the run before it ("python": the pure code decides
 * it, as it does an undecodable or legacy batch and any framing stop); "end": the bytes ended; "limit":
 * max_bytes read. The caller advances the transaction tracker to the max last offset. */
PyObject *kl_clean_run(PyObject *self, PyObject *args) {
    PyObject *mobj, *bufobj, *decompress;
    Py_ssize_t start, end, max_bytes;
    long long now, upper_bound;
    if (!PyArg_ParseTuple(args, "O!OnnLLOn", &OffsetMapType, &mobj, &bufobj, &start, &end, &now, &upper_bound,
                          &decompress, &max_bytes))
        return NULL;
    OffsetMapObject *m = (OffsetMapObject *)mobj;
    run_t r;
    if (run_open(&r, bufobj, start, end) < 0)
        return NULL;
    long long batches = 0, records = 0;
    for (;;) {
        batch_hdr h;
        if (!run_next(&r, max_bytes, &h))
            break;
        int64_t last;
        if ((h.attributes & 0x30) || (h.attributes & 7) > 4 || h.producer_id >= 0 ||
            __builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last) ||
            (last < INT64_MAX && last + 1 == upper_bound)) {
            r.reason = "python";
            break;
        }
        section_t s;
        int has_horizon;
        long long horizon;
        int ok = batch_section(bufobj, r.pos, decompress, &s, &has_horizon, &horizon);
        long long n = 0, kept = 0, tombstones = 0;
        int rc = ok > 0 ? keep_decide(m, &s, has_horizon, horizon, now, NULL, &n, &kept, &tombstones) : ok;
        section_release(&s);
        if (rc < 0) {
            PyBuffer_Release(&r.view);     /* the error stays set */
            return NULL;
        }
        if (rc == 0 || kept > 0) {         /* the pure code decides, reports or rebuilds it */
            r.reason = "python";
            break;
        }
        run_took(&r, last);
        batches++;
        records += n;
        r.pos += h.size;
    }
    PyObject *ml = run_close(&r);
    return ml ? Py_BuildValue("(nsLnLN)", r.pos, r.reason, batches, r.pos - r.begin, records, ml) : NULL;
}
