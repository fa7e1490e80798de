/* Arrow buffers of a binary/string column gathered from the spans of a scan's rows (kafkalog_formats.columns),
 * for the Spark reader (kafkalog_cli/spark/rows_native.py): one pass, no per-record Python object. */
#include "native.h"

/* gather(rows, field_pos, field_len, sources, source_of_row) -> (offsets int32[n+1], data, validity bitmap,
 * null_count); spans with length -1 are null. One pass, no per-record Python object. */
PyObject *kl_gather(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"table", "width", "pos_field", "len_field", "sources", "row_source", NULL};
    PyObject *table, *sources, *row_source;
    int width, pf, lf;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OiiiOO", kwlist, &table, &width, &pf, &lf, &sources, &row_source))
        return NULL;
    if (width <= 0 || pf < 0 || lf < 0 || pf >= width || lf >= width || !PyList_Check(sources)) {
        PyErr_SetString(PyExc_ValueError, "bad gather arguments");
        return NULL;
    }
    Py_buffer t = {0}, rs = {0};
    Py_ssize_t nsrc = PyList_GET_SIZE(sources);
    Py_buffer *sv = PyMem_Calloc((size_t)(nsrc ? nsrc : 1), sizeof(Py_buffer));
    gbuf offs = {0}, data = {0}, valid = {0};
    if (!sv)
        return PyErr_NoMemory();
    if (PyObject_GetBuffer(table, &t, PyBUF_SIMPLE) < 0 || PyObject_GetBuffer(row_source, &rs, PyBUF_SIMPLE) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < nsrc; i++)
        if (PyObject_GetBuffer(PyList_GET_ITEM(sources, i), &sv[i], PyBUF_SIMPLE) < 0)
            goto fail;
    Py_ssize_t n = t.len / (Py_ssize_t)(width * sizeof(int64_t));
    if (rs.len < n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "row_source is shorter than the table");
        goto fail;
    }
    const int64_t *rows = (const int64_t *)t.buf, *src = (const int64_t *)rs.buf;
    if (gbuf_init(&offs, NULL, (n + 1) * 4) < 0 || gbuf_init(&data, NULL, 0) < 0 ||
        gbuf_init(&valid, NULL, (n + 7) / 8) < 0)
        goto fail;
    memset(gbuf_ptr(&valid), 0, (size_t)((n + 7) / 8));
    valid.len = (n + 7) / 8;
    int32_t *o = (int32_t *)gbuf_ptr(&offs);
    o[0] = 0;
    offs.len = (n + 1) * 4;
    int64_t total = 0, nulls = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t p = rows[i * width + pf], l = rows[i * width + lf], s = src[i];
        if (l < 0) {
            nulls++;
        } else {
            if (s < 0 || s >= nsrc || p < 0 || p > sv[s].len || l > sv[s].len - p || total + l > INT32_MAX) {
                PyErr_SetString(PyExc_ValueError, "span outside its source, or more than 2 GiB in one column");
                goto fail;
            }
            if (gbuf_put(&data, (const uint8_t *)sv[s].buf + p, l) < 0)
                goto fail;
            total += l;
            gbuf_ptr(&valid)[i >> 3] |= (char)(1 << (i & 7));
        }
        ((int32_t *)gbuf_ptr(&offs))[i + 1] = (int32_t)total;
    }
    PyBuffer_Release(&t);
    PyBuffer_Release(&rs);
    for (Py_ssize_t i = 0; i < nsrc; i++)
        PyBuffer_Release(&sv[i]);
    PyMem_Free(sv);
    PyObject *a = gbuf_finish(&offs), *d = gbuf_finish(&data), *v = gbuf_finish(&valid);
    if (!a || !d || !v) {
        Py_XDECREF(a);
        Py_XDECREF(d);
        Py_XDECREF(v);
        return NULL;
    }
    return Py_BuildValue("(NNNL)", a, d, v, (long long)nulls);
fail:
    gbuf_clear(&offs);
    gbuf_clear(&data);
    gbuf_clear(&valid);
    if (t.obj)
        PyBuffer_Release(&t);
    if (rs.obj)
        PyBuffer_Release(&rs);
    for (Py_ssize_t i = 0; i < nsrc; i++)
        if (sv[i].obj)
            PyBuffer_Release(&sv[i]);
    PyMem_Free(sv);
    return NULL;
}
