/* The library's batch views and their records on the compiled path (kafkalog_formats.message_set):
 *
 *   BatchBase(buf, position)   message_set.BatchV2View itself when the extension is active: the header
 *                              fields read in C, the Python properties and methods of message_set._BatchV2
 *                              put on the type (adopt), a static type whose instances need no GC
 *   batch_iter(buf, start, end, view_type, slow)
 *                              BatchReader's walk: whole v2 batches in C, a view each; every other step (a
 *                              legacy entry, the end or a framing stop) by ``slow(position)``, BatchReader's
 *                              pure step, which also records the stop
 *   BatchBase.records()        a C iterator over the batch's Records, decoded one at a time (LZ4 and zstd
 *                              sections unframed in C, codecs.c); at the first record it cannot give it
 *                              hands over to the pure generator (``_records``), so records and errors are
 *                              the pure path's
 */
#include "native.h"
#include "structmember.h"

#define RECORDS_CHUNK 8192

typedef struct {
    PyObject_HEAD
    PyObject *buf;
    long long position, size, base_offset, partition_leader_epoch, magic, crc, attributes, last_offset_delta,
        base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, count;
} BatchObject;

static void fill(BatchObject *b, PyObject *buf, const uint8_t *p, Py_ssize_t position) {
    batch_hdr h;
    parse_batch_header(p + position, position, &h);
    Py_XSETREF(b->buf, Py_NewRef(buf));
    b->position = position;
    b->size = h.size;
    b->base_offset = h.base_offset;
    b->partition_leader_epoch = h.partition_leader_epoch;
    b->magic = h.magic;
    b->crc = h.crc;
    b->attributes = h.attributes;
    b->last_offset_delta = h.last_offset_delta;
    b->base_timestamp = h.base_timestamp;
    b->max_timestamp = h.max_timestamp;
    b->producer_id = h.producer_id;
    b->producer_epoch = h.producer_epoch;
    b->base_sequence = h.base_sequence;
    b->count = h.count;
}

static int Batch_init(BatchObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"buf", "position", NULL};
    PyObject *buf;
    Py_ssize_t position;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "On", kwlist, &buf, &position))
        return -1;
    Py_buffer v;
    if (PyObject_GetBuffer(buf, &v, PyBUF_SIMPLE) < 0)
        return -1;
    if (position < 0 || position > v.len - RECORD_BATCH_OVERHEAD) {
        PyBuffer_Release(&v);
        PyObject *m = PyImport_ImportModule("struct");     /* what HEADER.unpack_from raises */
        PyObject *err = m ? PyObject_GetAttrString(m, "error") : NULL;
        Py_XDECREF(m);
        if (err) {
            PyErr_Format(err, "unpack_from requires a buffer of at least %zd bytes for unpacking 61 bytes at "
                              "offset %zd (actual buffer size is %zd)", position + 61, position, v.len);
            Py_DECREF(err);
        }
        return -1;
    }
    fill(self, buf, v.buf, position);
    PyBuffer_Release(&v);
    return 0;
}

static void Batch_dealloc(BatchObject *self) {
    Py_XDECREF(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* what BatchBase.records needs from Python, set once by message_set (set_batch_support): the Record type,
 * the bounded v2 decompressor, and the module whose ``ext`` says whether the compiled path is on */
static PyObject *RecordType, *Decompress, *NativeModule, *ExtName;

PyObject *kl_set_batch_support(PyObject *self, PyObject *args) {
    PyObject *rt, *dec, *mod;
    if (!PyArg_ParseTuple(args, "O!OO", &PyType_Type, &rt, &dec, &mod))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)rt, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a tuple subclass");
        return NULL;
    }
    Py_XSETREF(RecordType, Py_NewRef(rt));
    Py_XSETREF(Decompress, Py_NewRef(dec));
    Py_XSETREF(NativeModule, Py_NewRef(mod));
    if (!ExtName && !(ExtName = PyUnicode_InternFromString("ext")))
        return NULL;
    Py_RETURN_NONE;
}

/* The records of one batch, decoded one at a time as they are asked for (memory: one record, whatever
 * the count). At the first record the C decoder cannot give (an invalid section, a value beyond 64 bits,
 * a decompression that fails) the iterator hands over to the pure generator ``view._records(None)``,
 * advanced past the records already given: the caller sees the same records and the same FormatError as
 * on the pure path, at the same point. */
typedef struct {
    PyObject_HEAD
    BatchObject *view;
    PyObject *owner;              /* the decompressed section, or NULL (the records are in the view's buffer) */
    Py_buffer data;               /* a view of the section's bytes while decoding */
    rcursor c;
    Py_ssize_t given;             /* records given so far */
    PyObject *pure;               /* the pure generator once handed over */
    int state;                    /* 0 not started, 1 decoding, 2 handed over, 3 done */
} RecIterObject;

/* the last headers tuple made (shared by all record iterators: records of a partition usually carry the
 * same headers, batch after batch; the GIL guards it) */
static headers_cache HeadersCache;

static void RecIter_release(RecIterObject *it) {
    if (it->data.obj)
        PyBuffer_Release(&it->data);
    Py_CLEAR(it->owner);
}

static int RecIter_clear(RecIterObject *it) {
    RecIter_release(it);
    Py_CLEAR(it->view);
    Py_CLEAR(it->pure);
    return 0;
}

static void RecIter_dealloc(RecIterObject *it) {
    RecIter_clear(it);
    PyObject_Free(it);
}

/* the pure generator, advanced past the records given: the next item comes from it */
static PyObject *RecIter_hand_over(RecIterObject *it) {
    RecIter_release(it);
    it->state = 2;
    it->pure = PyObject_CallMethod((PyObject *)it->view, "_records", "O", Py_None);
    if (!it->pure)
        return NULL;
    for (Py_ssize_t i = 0; i < it->given; i++) {
        PyObject *skip = PyIter_Next(it->pure);
        if (!skip)
            return NULL;            /* an error (or an end) the pure path gives earlier: passed on as is */
        Py_DECREF(skip);
    }
    return PyIter_Next(it->pure);
}

static int RecIter_start(RecIterObject *it) {
    /* 1 decoding, 0 hand over, -1 error (a BaseException of the decompressor) */
    BatchObject *b = it->view;
    if (b->count < 0 || b->size < RECORD_BATCH_OVERHEAD || !b->buf)
        return 0;
    Py_ssize_t start = (Py_ssize_t)b->position + RECORD_BATCH_OVERHEAD, stop = (Py_ssize_t)(b->position + b->size);
    int codec = (int)(b->attributes & 7);
    if (codec) {
        if (!Decompress || b->position < 0)
            return 0;
        it->owner = call_decompress(Decompress, b->buf, start, stop, codec);   /* in C where it can be */
        if (!it->owner)
            return PyErr_Occurred() ? -1 : 0;
        if (PyObject_GetBuffer(it->owner, &it->data, PyBUF_SIMPLE) < 0)
            return -1;
        start = 0;
        stop = it->data.len;
    } else {
        if (PyObject_GetBuffer(b->buf, &it->data, PyBUF_SIMPLE) < 0)
            return -1;
        if (b->position < 0 || stop > it->data.len)
            return 0;
    }
    const uint8_t *d = (const uint8_t *)it->data.buf + start;
    if (rcursor_init(&it->c, d, stop - start, (int32_t)b->count, b->base_offset, b->base_timestamp,
                     (int32_t)b->base_sequence, (b->attributes & 0x08) != 0, b->max_timestamp) < 0)
        return 0;
    it->state = 1;
    return 1;
}

static PyObject *RecIter_next(RecIterObject *it) {
    if (it->state == 0) {
        int rc = RecIter_start(it);
        if (rc < 0)
            return NULL;
        if (rc == 0)
            return RecIter_hand_over(it);
    }
    if (it->state == 2)
        return PyIter_Next(it->pure);
    if (it->state != 1)
        return NULL;
    record_t r;
    int st = rcursor_next(&it->c, &r);
    if (st == 1) {
        PyObject *rec = kl_make_record_cached((PyTypeObject *)RecordType, it->c.d, &r, &HeadersCache);
        if (rec)
            it->given++;
        return rec;
    }
    if (st == 0) {
        it->state = 3;
        RecIter_release(it);
        return NULL;
    }
    return RecIter_hand_over(it);
}

static PyTypeObject RecIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalog_formats._native.RecordIter",
    .tp_basicsize = sizeof(RecIterObject),
    .tp_dealloc = (destructor)RecIter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,           /* no cycle can go through it: the view never refers back */
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)RecIter_next,
};

/* records(max_output=None): the C iterator when the compiled path is on (``native.ext``: tests switch it off
 * at run time) and no bound is given; otherwise the pure generator ``self._records(max_output)`` */
static PyObject *Batch_records(BatchObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *max_output = Py_None;
    if (nargs > 1 || (kwnames && (PyTuple_GET_SIZE(kwnames) != 1 || nargs ||
                                  !PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0)) ||
                                  PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "max_output")))) {
        PyErr_SetString(PyExc_TypeError, "records() takes one optional argument, max_output");
        return NULL;
    }
    if (nargs == 1 || kwnames)
        max_output = args[0];
    if (max_output == Py_None && RecordType && NativeModule) {
        PyObject *dict = PyModule_GetDict(NativeModule);          /* borrowed */
        PyObject *ext = dict ? PyDict_GetItemWithError(dict, ExtName) : NULL;
        if (!ext && PyErr_Occurred())
            return NULL;
        if (ext && ext != Py_None) {
            if (PyType_Ready(&RecIterType) < 0)
                return NULL;
            RecIterObject *it = PyObject_New(RecIterObject, &RecIterType);
            if (!it)
                return NULL;
            it->view = (BatchObject *)Py_NewRef(self);
            it->owner = NULL;
            memset(&it->data, 0, sizeof(it->data));
            it->given = 0;
            it->pure = NULL;
            it->state = 0;
            return (PyObject *)it;
        }
    }
    return PyObject_CallMethod((PyObject *)self, "_records", "O", max_output);
}

/* adopt(type, namespace): the properties and functions of a Python class body put on the static view
 * type, so message_set.BatchV2View is this type itself (not a heap subclass: its instances then need no
 * GC, which a batch a record pays for); dunder names are left out */
PyObject *kl_adopt(PyObject *self, PyObject *args) {
    PyObject *tp, *ns;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &tp, &PyDict_Type, &ns))
        return NULL;
    if ((PyTypeObject *)tp != &BatchBaseType) {
        PyErr_SetString(PyExc_TypeError, "adopt: only BatchBase");
        return NULL;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    PyObject *dict = BatchBaseType.tp_dict;
    while (PyDict_Next(ns, &pos, &key, &value)) {
        if (!PyUnicode_Check(key))
            continue;
        Py_ssize_t n = PyUnicode_GET_LENGTH(key);
        if (n >= 4 && PyUnicode_READ_CHAR(key, 0) == '_' && PyUnicode_READ_CHAR(key, 1) == '_' &&
            PyUnicode_READ_CHAR(key, n - 1) == '_' && PyUnicode_READ_CHAR(key, n - 2) == '_')
            continue;
        if (PyDict_SetItem(dict, key, value) < 0)
            return NULL;
    }
    PyType_Modified(&BatchBaseType);
    Py_RETURN_NONE;
}

static PyMethodDef Batch_methods[] = {
    {"records", (PyCFunction)(void (*)(void))Batch_records, METH_FASTCALL | METH_KEYWORDS,
     "records(max_output=None): an iterator over the batch's Records"},
    {NULL}};

#define M(name) {#name, T_LONGLONG, offsetof(BatchObject, name), 0, NULL}
static PyMemberDef Batch_members[] = {
    {"buf", T_OBJECT, offsetof(BatchObject, buf), 0, NULL},
    M(position), M(size), M(base_offset), M(partition_leader_epoch), M(magic), M(crc), M(attributes),
    M(last_offset_delta), M(base_timestamp), M(max_timestamp), M(producer_id), M(producer_epoch),
    M(base_sequence), M(count),
    {NULL}};
#undef M

PyTypeObject BatchBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalog_formats.message_set.BatchV2View",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = (destructor)Batch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A magic >= 2 batch inside buf at position (header decoded in C, records on demand)",
    .tp_members = Batch_members,
    .tp_methods = Batch_methods,
    .tp_init = (initproc)Batch_init,
    .tp_new = PyType_GenericNew,
};

/* --- batch_iter ------------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *buf;
    PyTypeObject *view_type;
    PyObject *slow;               /* slow(position) -> (entry, next position) or None: the pure loop's step */
    Py_ssize_t position, end;
    Py_buffer view;               /* the buffer, held while the walk lasts (released at its end) */
} IterObject;

static void Iter_release(IterObject *it) {
    if (it->view.obj)
        PyBuffer_Release(&it->view);
}

static void Iter_dealloc(IterObject *it) {
    PyObject_GC_UnTrack(it);
    Iter_release(it);
    Py_XDECREF(it->buf);
    Py_XDECREF(it->view_type);
    Py_XDECREF(it->slow);
    PyObject_GC_Del(it);
}

static int Iter_traverse(IterObject *it, visitproc visit, void *arg) {
    Py_VISIT(it->buf);
    Py_VISIT(it->view_type);
    Py_VISIT(it->slow);
    return 0;
}

static int Iter_clear(IterObject *it) {
    Iter_release(it);
    Py_CLEAR(it->buf);
    Py_CLEAR(it->view_type);
    Py_CLEAR(it->slow);
    return 0;
}

/* the pure step at it->position: its entry (the position moved on), or NULL: the end (it->buf cleared) or an
 * error */
static PyObject *Iter_slow(IterObject *it) {
    Iter_release(it);                         /* the pure step runs without the buffer held */
    if (!it->slow) {
        Py_CLEAR(it->buf);
        return NULL;
    }
    PyObject *r = PyObject_CallFunction(it->slow, "n", it->position);
    if (!r)
        return NULL;
    if (r == Py_None) {
        Py_DECREF(r);
        Py_CLEAR(it->buf);
        return NULL;
    }
    PyObject *entry;
    Py_ssize_t next;
    if (!PyArg_ParseTuple(r, "On", &entry, &next)) {
        Py_DECREF(r);
        return NULL;
    }
    Py_INCREF(entry);
    Py_DECREF(r);
    it->position = next;
    return entry;
}

static PyObject *Iter_next(IterObject *it) {
    if (!it->buf)
        return NULL;
    if (!it->view.obj && PyObject_GetBuffer(it->buf, &it->view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t end = it->end < it->view.len ? it->end : it->view.len, pos = it->position, left = end - pos;
    const uint8_t *p = (const uint8_t *)it->view.buf + pos;
    /* BatchReader's checks, in its order; anything but a whole v2 batch ends the walk here */
    if (pos < 0 || left <= HEADER_SIZE_UP_TO_MAGIC || rd_i32(p + 8) < RECORD_OVERHEAD_V0 ||
        LOG_OVERHEAD + (int64_t)rd_i32(p + 8) > left || (int8_t)p[16] < 2 ||
        LOG_OVERHEAD + (int64_t)rd_i32(p + 8) < RECORD_BATCH_OVERHEAD)
        return Iter_slow(it);                 /* a legacy entry, or the end: the pure loop's step */
    BatchObject *b = (BatchObject *)it->view_type->tp_alloc(it->view_type, 0);
    if (!b)
        return NULL;
    fill(b, it->buf, it->view.buf, pos);
    it->position = pos + (Py_ssize_t)b->size;
    return (PyObject *)b;
}

static PyMemberDef Iter_members[] = {
    {"position", T_PYSSIZET, offsetof(IterObject, position), READONLY, "where the walk is (or stopped)"},
    {NULL}};

static PyTypeObject IterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalog_formats._native.BatchIter",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)Iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Iter_traverse,
    .tp_clear = (inquiry)Iter_clear,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Iter_next,
    .tp_members = Iter_members,
};

PyObject *kl_batch_iter(PyObject *self, PyObject *args) {
    PyObject *buf, *vt, *slow = Py_None;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "OnnO!|O", &buf, &start, &end, &PyType_Type, &vt, &slow))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)vt, &BatchBaseType)) {
        PyErr_SetString(PyExc_TypeError, "batch_iter: the view type must derive from BatchBase");
        return NULL;
    }
    if (PyType_Ready(&IterType) < 0)
        return NULL;
    IterObject *it = PyObject_GC_New(IterObject, &IterType);
    if (!it)
        return NULL;
    it->buf = Py_NewRef(buf);
    it->view_type = (PyTypeObject *)Py_NewRef(vt);
    it->slow = slow == Py_None ? NULL : Py_NewRef(slow);
    it->position = start;
    it->end = end;
    memset(&it->view, 0, sizeof(it->view));
    PyObject_GC_Track(it);
    return (PyObject *)it;
}

