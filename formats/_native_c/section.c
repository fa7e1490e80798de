/* One v2 records section located for a per-record pass: given as bytes (``section_args``) or found at a
 * batch position, decompressed when needed (``batch_section``), walked with an rcursor. Shared by the
 * format layer's batch check (scan.c: batch_sound) and the repair layer's offset-map passes
 * (kafkalog_cli/repair/_native_c/offset_map.c). */
#include "native.h"

void section_release(section_t *s) {
    if (s->data.obj)
        PyBuffer_Release(&s->data);
    Py_CLEAR(s->owner);
}

int section_args(PyObject *dataobj, int count, long long base_offset, long long base_ts, int base_seq,
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

int section_start(section_t *s) {
    return rcursor_init(&s->c, s->d, s->len, s->count, s->base_offset, s->base_ts, s->base_seq, s->lat,
                        s->max_ts);
}


/* the records section of the v2 data batch at ``position`` of ``bufobj`` (header parsed here, compressed
 * records through ``decompress``): 1 ok, 0 the pure path decides (not a v2 data batch, the bytes do not
 * hold it, decompression failed), -1 error set */
int batch_section(PyObject *bufobj, Py_ssize_t position, PyObject *decompress, section_t *s,
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
        h.size > s->data.len - position || h.size > NATIVE_MAX_BATCH)
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

/* 1 valid (``*n``: its records), 0 invalid (the pure path reports it) */
int section_validate(section_t *s, Py_ssize_t *n) {
    if (section_start(s) < 0)
        return 0;
    record_t r;
    Py_ssize_t k = 0;
    int st;
    while ((st = rcursor_next(&s->c, &r)) == 1)
        k++;
    *n = k;
    return st == 0;
}

