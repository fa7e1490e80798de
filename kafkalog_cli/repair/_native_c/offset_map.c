/* kafkalog_cli.repair._native_clean: the cleaner's offset map in C, Kafka's SkimpyOffsetMap
 * (storage/.../log/SkimpyOffsetMap.java, 3.5-4.x; core/.../log/OffsetMap.scala before), byte for byte the
 * table repair/cleaner.OffsetMap keeps in Python:
 *
 *   one fixed array of ``slots`` entries of 24 bytes (16-byte MD5 of the key, 8-byte offset big-endian as a
 *   ByteBuffer writes it), slots = memory / 24, allocated once (zero pages: only the entries touched take
 *   resident memory); the i-th probe of a digest reads the big-endian int at byte min(i, 12) of it, adds
 *   max(0, i - 12) (Java int arithmetic), takes Utils.abs and the remainder by slots (``positionOf``); an
 *   entry whose 24 bytes are all zero is empty (``isEmpty``); ``get`` gives up after slots + 12 probes.
 *
 * The capacity rule is the cleaner's (``Cleaner.buildOffsetMapForSegment``): a put is refused (and the map
 * marked full) once it holds ``(int)(slots * load factor)`` entries, checked before every put, even of a
 * key already present. ``latest_offset`` follows ``put``/``updateLatestOffset``.
 *
 * And the two per-record passes of compact over a v2 records section:
 *
 *   map_put(map, data, ...)   the offset-map build: every keyed record at or above the first dirty offset
 *   keep_mask(map, data, ...) the cleaning decision of cleaner._keep_record for every record of a batch
 *
 * Both validate the whole section before touching anything (an invalid batch goes to the pure path,
 * which must see the map exactly as a pure run would), then decode and hash it in chunks of records:
 * memory is the fixed table plus a few kilobytes, whatever the number of records or distinct keys.
 *
 * The Python seam is kafkalog_cli/repair/native_clean.py (which pure function of repair/cleaner.py each of
 * these accelerates); built from this file, md5.c and the format layer's shared sources (records.c,
 * section.c), see setup.py.
 */
#include "native.h"
#include "md5.h"
#include "structmember.h"

#define ENTRY 24
#define HASH 16

typedef struct {
    PyObject_HEAD
    uint8_t *table;              /* slots * ENTRY bytes, zeroed */
    long long slots;
    long long count;             /* entries put (SkimpyOffsetMap.entries) */
    double load_factor;
    long long max_entries;       /* (int)(slots * load factor): the cleaner's maxDesiredMapSize */
    long long latest_offset;
    int full;
    Py_ssize_t exports;          /* buffer views of the table handed out */
} OffsetMapObject;

static inline void wr_i64(uint8_t *p, int64_t v) {
    uint64_t u = (uint64_t)v;
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)u;
        u >>= 8;
    }
}

/* SkimpyOffsetMap.positionOf, as a slot number */
static inline long long slot_of(const uint8_t *d, long long attempt, long long slots) {
    uint32_t probe = rd_u32(d + (attempt < HASH - 4 ? attempt : HASH - 4));
    if (attempt > HASH - 4)
        probe += (uint32_t)(attempt - (HASH - 4));   /* Java int addition wraps */
    int32_t p = (int32_t)probe;
    uint32_t a = p == INT32_MIN ? 0 : (uint32_t)(p < 0 ? -p : p);   /* Utils.abs */
    return (long long)(a % (uint64_t)slots);
}

static inline int is_empty(const uint8_t *e) {
    static const uint8_t zero[ENTRY];
    return memcmp(e, zero, ENTRY) == 0;
}

/* the entry holding digest ``d`` or NULL (SkimpyOffsetMap.get's probe sequence) */
static const uint8_t *find_entry(OffsetMapObject *m, const uint8_t *d) {
    long long max_attempts = m->slots + HASH - 4;
    for (long long attempt = 0; attempt < max_attempts; attempt++) {
        const uint8_t *e = m->table + ENTRY * slot_of(d, attempt, m->slots);
        if (is_empty(e))
            return NULL;
        if (memcmp(e, d, HASH) == 0)
            return e;
    }
    return NULL;
}

/* cleaner.OffsetMap.put: 1 put, 0 refused (the map holds max_entries: full) */
static int put_digest(OffsetMapObject *m, const uint8_t *d, int64_t offset) {
    /* a load factor above 1 would let the table fill up: Kafka's put then throws (entries >= slots) */
    if (m->count >= m->max_entries || m->count >= m->slots) {
        m->full = 1;
        return 0;
    }
    for (long long attempt = 0;; attempt++) {
        uint8_t *e = m->table + ENTRY * slot_of(d, attempt, m->slots);
        if (is_empty(e)) {
            memcpy(e, d, HASH);
            wr_i64(e + HASH, offset);
            m->count++;
            break;
        }
        if (memcmp(e, d, HASH) == 0) {
            wr_i64(e + HASH, offset);
            break;
        }
    }
    m->latest_offset = offset;          /* SkimpyOffsetMap.put sets lastOffset */
    return 1;
}

static int64_t get_digest(OffsetMapObject *m, const uint8_t *d) {
    const uint8_t *e = find_entry(m, d);
    return e ? rd_i64(e + HASH) : -1;
}

static int OffsetMap_init(OffsetMapObject *m, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"slots", "load_factor", NULL};
    long long slots;
    double lf = 0.9;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|d", kwlist, &slots, &lf))
        return -1;
    if (m->exports > 0) {
        PyErr_SetString(PyExc_BufferError, "the offset map's table is exported");
        return -1;
    }
    /* Kafka: memory is an int (at most Int.MaxValue bytes), so slots < 2^31 / 24 */
    if (slots < 1 || slots > KL_INT_MAX / ENTRY) {
        PyErr_Format(PyExc_ValueError, "slots must be between 1 and %lld", (long long)(KL_INT_MAX / ENTRY));
        return -1;
    }
    if (!(lf > 0)) {
        PyErr_SetString(PyExc_ValueError, "load_factor must be positive");
        return -1;
    }
    uint8_t *table = PyMem_RawCalloc((size_t)slots, ENTRY);   /* large: fresh zero pages, touched on use */
    if (!table) {
        PyErr_NoMemory();
        return -1;
    }
    PyMem_RawFree(m->table);
    m->table = table;
    m->slots = slots;
    m->count = 0;
    m->load_factor = lf;
    m->max_entries = (long long)((double)slots * lf);   /* Scala (slots * loadFactor).toInt, in range here */
    m->latest_offset = -1;
    m->full = 0;
    return 0;
}

static void OffsetMap_dealloc(OffsetMapObject *m) {
    PyMem_RawFree(m->table);
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
    if (!m->table) {
        PyErr_SetString(PyExc_ValueError, "offset map not initialised");
        return NULL;
    }
    return PyBool_FromLong(put_digest(m, d, offset));
}

static PyObject *OffsetMap_get(OffsetMapObject *m, PyObject *args) {
    Py_buffer key;
    if (!PyArg_ParseTuple(args, "y*", &key))
        return NULL;
    uint8_t d[16];
    kl_md5(key.buf, (size_t)key.len, d);
    PyBuffer_Release(&key);
    return PyLong_FromLongLong(m->table ? get_digest(m, d) : -1);
}

static Py_ssize_t OffsetMap_len(OffsetMapObject *m) { return (Py_ssize_t)m->count; }

static PyObject *OffsetMap_max_entries(OffsetMapObject *m, void *closure) { return PyLong_FromLongLong(m->max_entries); }

static PyObject *OffsetMap_get_full(OffsetMapObject *m, void *closure) { return PyBool_FromLong(m->full); }

static int OffsetMap_set_full(OffsetMapObject *m, PyObject *v, void *closure) {
    int b = v ? PyObject_IsTrue(v) : 0;
    if (b < 0)
        return -1;
    m->full = b;
    return 0;
}

/* the table as a read-only buffer (memoryview(map)): the parity tests compare it with the pure map's */
static int OffsetMap_getbuffer(OffsetMapObject *m, Py_buffer *view, int flags) {
    if (!m->table) {
        PyErr_SetString(PyExc_BufferError, "offset map not initialised");
        return -1;
    }
    if (PyBuffer_FillInfo(view, (PyObject *)m, m->table, (Py_ssize_t)(m->slots * ENTRY), 1, flags) < 0)
        return -1;
    m->exports++;
    return 0;
}

static void OffsetMap_releasebuffer(OffsetMapObject *m, Py_buffer *view) { m->exports--; }

static PyBufferProcs OffsetMap_as_buffer = {(getbufferproc)OffsetMap_getbuffer,
                                            (releasebufferproc)OffsetMap_releasebuffer};

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

static PyTypeObject OffsetMapType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalog_cli.repair._native_clean.OffsetMap",
    .tp_basicsize = sizeof(OffsetMapObject),
    .tp_dealloc = (destructor)OffsetMap_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Kafka's SkimpyOffsetMap: slots of MD5(key) + offset, with the cleaner's capacity rule",
    .tp_methods = OffsetMap_methods,
    .tp_members = OffsetMap_members,
    .tp_getset = OffsetMap_getset,
    .tp_as_sequence = &OffsetMap_seq,
    .tp_as_buffer = &OffsetMap_as_buffer,
    .tp_init = (initproc)OffsetMap_init,
    .tp_new = PyType_GenericNew,
};

/* --- per-batch passes ------------------------------------------------------------------------------- */

/* The records of a section in chunks: ``section_walk`` validates the whole section first (nothing is
 * decided on a batch the pure path will report), then decodes CHUNK records at a time and hashes the keys
 * ``select`` picks in one kl_md5_many call; ``visit`` sees every record with its digest (NULL when not
 * selected). Memory: the chunk tables, whatever the record count (a 2 M record batch is fine). */
#define CHUNK 512

typedef struct {
    record_t recs[CHUNK];
    uint8_t digests[CHUNK * HASH];
    const uint8_t *ptrs[CHUNK];
    size_t lens[CHUNK];
    int where[CHUNK];
    uint8_t tmp[CHUNK * HASH];
} chunk_t;

/* mode 0 (map build): keyed records at or above ``bound``; mode 1 (cleaning): keyed records at or below
 * ``bound`` (the map's latest offset) */
static inline int selected(const record_t *r, int mode, int64_t bound) {
    return r->key_len >= 0 && (mode == 0 ? r->offset >= bound : r->offset <= bound);
}

typedef int (*visit_fn)(void *ctx, const record_t *r, const uint8_t *digest);

/* 1 every record visited (or ``visit`` stopped the walk with 0), -1 error set; call on a validated section */
static int section_walk(section_t *s, int mode, int64_t bound, visit_fn visit, void *ctx) {
    chunk_t *ch = PyMem_RawMalloc(sizeof(chunk_t));
    if (!ch) {
        PyErr_NoMemory();
        return -1;
    }
    section_start(s);
    const uint8_t *d = s->d;
    int more = 1, rc = 1;
    while (more && rc == 1) {
        int n = 0, k = 0;
        while (n < CHUNK && (more = rcursor_next(&s->c, &ch->recs[n]) == 1)) {
            if (selected(&ch->recs[n], mode, bound)) {
                ch->ptrs[k] = d + ch->recs[n].key_pos;
                ch->lens[k] = (size_t)ch->recs[n].key_len;
                ch->where[k++] = n;
            }
            n++;
        }
        kl_md5_many(ch->ptrs, ch->lens, (size_t)k, ch->tmp);
        for (int i = 0; i < k; i++)
            memcpy(ch->digests + HASH * ch->where[i], ch->tmp + HASH * i, HASH);
        for (int i = 0, j = 0; i < n && rc == 1; i++) {
            int sel = j < k && ch->where[j] == i;
            rc = visit(ctx, &ch->recs[i], sel ? ch->digests + HASH * i : NULL);
            j += sel;
        }
    }
    PyMem_RawFree(ch);
    return rc < 0 ? -1 : 1;
}

static int map_ready(OffsetMapObject *m) {
    if (m->table)
        return 1;
    PyErr_SetString(PyExc_ValueError, "offset map not initialised");
    return 0;
}

typedef struct {
    OffsetMapObject *m;
    int result;                  /* 1 every key put, 0 the map filled up */
} put_ctx;

static int put_visit(void *ctx, const record_t *r, const uint8_t *digest) {
    put_ctx *c = ctx;
    if (!digest)
        return 1;
    if (!put_digest(c->m, digest, r->offset)) {
        c->result = 0;
        return 0;
    }
    return 1;
}

/* map_put(map, data, count, base_offset, base_timestamp, base_sequence, log_append_time, first_dirty)
 * -> 1 every keyed record at or above first_dirty put; 0 the map filled up (build_offset_map stops);
 *    None: the section is invalid (pure path) */
static PyObject *map_put_core(OffsetMapObject *m, section_t *s, long long first_dirty) {
    Py_ssize_t n;
    if (!map_ready(m))
        return NULL;
    if (!section_validate(s, &n))
        Py_RETURN_NONE;
    put_ctx c = {m, 1};
    if (section_walk(s, 0, first_dirty, put_visit, &c) < 0)
        return NULL;
    return PyLong_FromLong(c.result);
}

static PyObject *kl_map_put(PyObject *self, PyObject *args) {
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
static PyObject *kl_map_put_batch(PyObject *self, PyObject *args) {
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
typedef struct {
    OffsetMapObject *m;
    int has_horizon;
    long long horizon, now;
    uint8_t *mask;               /* one byte per record, or NULL */
    Py_ssize_t i;
    long long kept, tombstones;
} keep_ctx;

static int keep_visit(void *ctx, const record_t *r, const uint8_t *digest) {
    keep_ctx *c = ctx;
    int keep;
    if (r->offset > c->m->latest_offset)
        keep = 1;
    else if (r->key_len < 0)
        keep = 0;
    else if (r->offset < get_digest(c->m, digest))
        keep = 0;
    else if (r->value_len >= 0)
        keep = 1;
    else
        keep = !c->has_horizon || c->now < c->horizon;
    if (c->mask)
        c->mask[c->i] = (uint8_t)keep;
    c->i++;
    c->kept += keep;
    c->tombstones += keep && r->value_len < 0;
    return 1;
}

static int keep_decide(OffsetMapObject *m, section_t *s, int has_horizon, long long horizon, long long now,
                       gbuf *mask, long long *n_out, long long *kept_out, long long *tombstones_out) {
    /* cleaner._keep_record for every record of the section: 1 decided (one byte per record into ``mask``
     * when given), 0 the section is invalid (pure path), -1 error set */
    Py_ssize_t n;
    if (!map_ready(m))
        return -1;
    if (!section_validate(s, &n))
        return 0;
    if (mask && gbuf_init(mask, NULL, n) < 0)
        return -1;
    keep_ctx c = {m, has_horizon, horizon, now, mask ? (uint8_t *)gbuf_ptr(mask) : NULL, 0, 0, 0};
    if (section_walk(s, 1, m->latest_offset, keep_visit, &c) < 0) {
        if (mask)
            gbuf_clear(mask);
        return -1;
    }
    if (mask)
        mask->len = n;
    *n_out = n;
    *kept_out = c.kept;
    *tombstones_out = c.tombstones;
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

static PyObject *kl_keep_mask(PyObject *self, PyObject *args) {
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
static PyObject *kl_keep_batch(PyObject *self, PyObject *args) {
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
static PyObject *kl_map_put_run(PyObject *self, PyObject *args) {
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
static PyObject *kl_clean_run(PyObject *self, PyObject *args) {
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

/* --- the module ------------------------------------------------------------------------------------- */
static PyObject *py_md5(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data))
        return NULL;
    uint8_t out[16];
    kl_md5(data.buf, (size_t)data.len, out);
    PyBuffer_Release(&data);
    return PyBytes_FromStringAndSize((const char *)out, 16);
}

static PyObject *py_md5_many(PyObject *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "md5_many takes a sequence of bytes");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const uint8_t **ptrs = PyMem_Malloc(sizeof(uint8_t *) * (size_t)(n ? n : 1));
    size_t *lens = PyMem_Malloc(sizeof(size_t) * (size_t)(n ? n : 1));
    PyObject *out = PyBytes_FromStringAndSize(NULL, 16 * n);
    if (!ptrs || !lens || !out) {
        PyMem_Free(ptrs);
        PyMem_Free(lens);
        Py_XDECREF(out);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "md5_many takes bytes");
            PyMem_Free(ptrs);
            PyMem_Free(lens);
            Py_DECREF(out);
            Py_DECREF(seq);
            return NULL;
        }
        ptrs[i] = (const uint8_t *)PyBytes_AS_STRING(b);
        lens[i] = (size_t)PyBytes_GET_SIZE(b);
    }
    kl_md5_many(ptrs, lens, (size_t)n, (uint8_t *)PyBytes_AS_STRING(out));
    PyMem_Free(ptrs);
    PyMem_Free(lens);
    Py_DECREF(seq);
    return out;
}

static PyMethodDef methods[] = {
    {"md5", py_md5, METH_VARARGS, "md5(data) -> 16-byte digest"},
    {"md5_many", py_md5_many, METH_O, "md5_many([data, ...]) -> the digests, 16 bytes each"},
    {"map_put", kl_map_put, METH_VARARGS, "offset-map build over one records section"},
    {"keep_mask", kl_keep_mask, METH_VARARGS, "cleaner keep decisions for one records section"},
    {"map_put_batch", kl_map_put_batch, METH_VARARGS, "map_put for the v2 data batch at a position"},
    {"keep_batch", kl_keep_batch, METH_VARARGS, "keep_mask for the v2 data batch at a position"},
    {"map_put_run", kl_map_put_run, METH_VARARGS, "the offset-map build over a run of plain data batches"},
    {"clean_run", kl_clean_run, METH_VARARGS, "the cleaning of a run of plain data batches of which nothing is kept"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native_clean",
                                       "the log cleaner's offset map and per-record passes in C", -1, methods};

PyMODINIT_FUNC PyInit__native_clean(void) {
    if (PyType_Ready(&OffsetMapType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    Py_INCREF(&OffsetMapType);
    if (PyModule_AddObject(m, "OffsetMap", (PyObject *)&OffsetMapType) < 0) {
        Py_DECREF(&OffsetMapType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "LAYOUT_VERSION", KL_LAYOUT_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
