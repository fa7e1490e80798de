/* Module definition of kafkalog_formats._native (see native.h for the design; the Python wrapper is
 * kafkalog_formats.native, which also decides whether this module is used at all). */
#include "native.h"
#include "text.h"

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

static PyMethodDef methods[] = {
    {"crc32c", py_crc32c, METH_VARARGS, "crc32c(data, value=0) -> CRC-32C, continuing from value"},
    {"crc32c_impl", py_crc32c_impl, METH_NOARGS, "'sse4.2' or 'table'"},
    {"scan", (PyCFunction)(void (*)(void))kl_scan, METH_VARARGS | METH_KEYWORDS, "columns for a range of batches"},
    {"records", (PyCFunction)(void (*)(void))kl_records, METH_VARARGS | METH_KEYWORDS,
     "Record tuples of one records section, or None when the pure path must report it"},
    {"verify_walk", (PyCFunction)(void (*)(void))kl_verify_walk, METH_VARARGS | METH_KEYWORDS,
     "verify's per-batch checks over batches without findings"},
    {"table_add", kl_table_add, METH_VARARGS, "one batch into verify's batch table (the pure path's batches)"},
    {"gather", (PyCFunction)(void (*)(void))kl_gather, METH_VARARGS | METH_KEYWORDS, "Arrow buffers from spans"},
    {"batch_sound", kl_batch_sound, METH_VARARGS, "CRC and records of one v2 data batch: True, or None (the pure check decides)"},
    {"recover_run", kl_recover_run, METH_VARARGS, "LogSegment.recover over a run of plain batches (index entries, no records)"},
    {"header_walk", kl_header_walk, METH_VARARGS, "offsets and producer ids of a run of batch headers"},
    {"resync_find", kl_resync_find, METH_VARARGS, "the first resynchronisation point in damaged bytes (resync.find)"},
    {"resync_inside_record", kl_resync_inside_record, METH_VARARGS, "rule 5 of resync: a batch at the end of a record"},
    {"salvage_walk", kl_salvage_walk, METH_VARARGS, "the batches recover --salvage keeps as they are, over a run"},
    {"coordinator_texts", kl_coordinator_texts, METH_VARARGS, "JSON texts of coordinator records by compiled programs"},
    {"batch_iter", kl_batch_iter, METH_VARARGS, "BatchReader's walk over whole v2 batches, a view each"},
    {"set_batch_support", kl_set_batch_support, METH_VARARGS, "Record type, decompressor and native module for BatchBase.records"},
    {"fast_decompress", kl_py_fast_decompress, METH_VARARGS, "a v2 records section decompressed in C, or None"},
    {"xxh32", kl_py_xxh32, METH_VARARGS, "xxh32(data, seed=0) -> XXH32"},
    {"set_record_headers", kl_set_record_headers, METH_VARARGS,
     "the type of a record's headers beyond a count (record.RecordHeaders), and that count"},
    {"header_pairs", kl_header_pairs, METH_VARARGS, "a chunk of a RecordHeaders' pairs from its bytes"},
    {"adopt", kl_adopt, METH_VARARGS, "the methods of a Python class body put on BatchBase"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native", "kafkalog's compiled record path", -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    kl_crc32c_init();
    kl_text_init();
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
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
        PyModule_AddIntConstant(m, "NH", NH) < 0 || PyModule_AddIntConstant(m, "LAYOUT_VERSION", KL_LAYOUT_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "MAX_RECORDS", NATIVE_MAX_RECORDS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_HEADERS", NATIVE_MAX_HEADERS) < 0 || kl_add_decompress_capsule(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
