/* Module definition of kafkalog_formats._native (see native.h for the design; the Python wrapper is
 * kafkalog_formats.native, which also decides whether this module is used at all). */
#include "native.h"

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    Py_buffer data;
    unsigned long value = 0;
    if (!PyArg_ParseTuple(args, "y*|k", &data, &value))
        return NULL;
    uint32_t c;
    Py_BEGIN_ALLOW_THREADS
    c = kl_crc32c((uint32_t)value, data.buf, (size_t)data.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *py_crc32c_impl(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(kl_crc32c_impl()); }

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
    {"crc32c", py_crc32c, METH_VARARGS, "crc32c(data, value=0) -> CRC-32C, continuing from value"},
    {"crc32c_impl", py_crc32c_impl, METH_NOARGS, "'sse4.2' or 'table'"},
    {"md5", py_md5, METH_VARARGS, "md5(data) -> 16-byte digest"},
    {"md5_many", py_md5_many, METH_O, "md5_many([data, ...]) -> the digests, 16 bytes each"},
    {"scan", (PyCFunction)(void (*)(void))kl_scan, METH_VARARGS | METH_KEYWORDS, "columns for a range of batches"},
    {"records", (PyCFunction)(void (*)(void))kl_records, METH_VARARGS | METH_KEYWORDS,
     "Record tuples of one records section, or None when the pure path must report it"},
    {"verify_walk", (PyCFunction)(void (*)(void))kl_verify_walk, METH_VARARGS | METH_KEYWORDS,
     "verify's per-batch checks over batches without findings"},
    {"table_add", kl_table_add, METH_VARARGS, "one batch into verify's batch table (the pure path's batches)"},
    {"render_text", (PyCFunction)(void (*)(void))kl_render_text, METH_VARARGS | METH_KEYWORDS, "Kafka text lines"},
    {"render_json", (PyCFunction)(void (*)(void))kl_render_json, METH_VARARGS | METH_KEYWORDS, "JSON lines"},
    {"gather", (PyCFunction)(void (*)(void))kl_gather, METH_VARARGS | METH_KEYWORDS, "Arrow buffers from spans"},
    {"map_put", kl_map_put, METH_VARARGS, "offset-map build over one records section"},
    {"keep_mask", kl_keep_mask, METH_VARARGS, "cleaner keep decisions for one records section"},
    {"map_put_batch", kl_map_put_batch, METH_VARARGS, "map_put for the v2 data batch at a position"},
    {"keep_batch", kl_keep_batch, METH_VARARGS, "keep_mask for the v2 data batch at a position"},
    {"map_put_run", kl_map_put_run, METH_VARARGS, "the offset-map build over a run of plain data batches"},
    {"clean_run", kl_clean_run, METH_VARARGS, "the cleaning of a run of plain data batches of which nothing is kept"},
    {"batch_sound", kl_batch_sound, METH_VARARGS, "CRC and records of one v2 data batch: True, or None (the pure check decides)"},
    {"recover_run", kl_recover_run, METH_VARARGS, "LogSegment.recover over a run of plain batches (index entries, no records)"},
    {"header_walk", kl_header_walk, METH_VARARGS, "offsets and producer ids of a run of batch headers"},
    {"coordinator_texts", kl_coordinator_texts, METH_VARARGS, "JSON texts of coordinator records by compiled programs"},
    {"batch_iter", kl_batch_iter, METH_VARARGS, "BatchReader's walk over whole v2 batches, a view each"},
    {"set_batch_support", kl_set_batch_support, METH_VARARGS, "Record type, decompressor and native module for BatchBase.records"},
    {"fast_decompress", kl_py_fast_decompress, METH_VARARGS, "an LZ4 or zstd v2 records section unframed in C, or None"},
    {"xxh32", kl_py_xxh32, METH_VARARGS, "xxh32(data, seed=0) -> XXH32"},
    {"adopt", kl_adopt, METH_VARARGS, "the methods of a Python class body put on BatchBase"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native", "kafkalog's compiled record path", -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    kl_crc32c_init();
    kl_render_init();
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
    if (PyType_Ready(&BatchBaseType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&BatchBaseType);
    if (PyModule_AddObject(m, "BatchBase", (PyObject *)&BatchBaseType) < 0) {
        Py_DECREF(&BatchBaseType);
        Py_DECREF(m);
        return NULL;
    }
    /* the column layout, checked by the Python wrapper against its own names */
    if (PyModule_AddIntConstant(m, "NB", NB) < 0 || PyModule_AddIntConstant(m, "NR", NR) < 0 ||
        PyModule_AddIntConstant(m, "NH", NH) < 0 || PyModule_AddIntConstant(m, "LAYOUT_VERSION", 3) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
