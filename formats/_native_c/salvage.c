/* The resynchronisation scan of recover --salvage and of the readers' --salvage, in C: the compiled twin of
 * kafkalog_formats.resync.find (the pure reference; its docstring states the four rules a position must
 * meet). Only positions whose byte 16 is 2 are looked at (memchr), the cheap header rules and the next
 * header are tested before any CRC, and the CRC bytes spent are bounded.
 *
 *   resync_find(buf, start, limit, end, crc_budget) -> (position, crc bytes)
 *     position: the first p in [start, limit) meeting the rules with batches ending by ``end``; -1 none;
 *     -2 the budget was spent first.
 */
#include "native.h"

/* rules 1-2 for the batch framed at p: its end, or -1 */
static Py_ssize_t plausible(const uint8_t *buf, Py_ssize_t p, Py_ssize_t end) {
    if (p < 0 || p + RECORD_BATCH_OVERHEAD > end || buf[p + 16] != 2)
        return -1;
    int32_t length = rd_i32(buf + p + 8);
    if (length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD || (int64_t)length > (int64_t)(end - p - LOG_OVERHEAD))
        return -1;
    if ((rd_i16(buf + p + 21) & 0x07) > 4 || rd_i32(buf + p + 23) < 0 || rd_i32(buf + p + 57) < 0)
        return -1;
    return p + LOG_OVERHEAD + length;
}

static int crc_ok(const uint8_t *buf, Py_ssize_t p, Py_ssize_t q) {
    return kl_crc32c(0, buf + p + CRC_START, (size_t)(q - p - CRC_START)) == rd_u32(buf + p + 17);
}

PyObject *kl_resync_find(PyObject *self, PyObject *args) {
    PyObject *bufobj;
    Py_ssize_t start, limit, end;
    long long budget;
    if (!PyArg_ParseTuple(args, "OnnnL", &bufobj, &start, &limit, &end, &budget))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *buf = view.buf;
    if (end > view.len)
        end = view.len;
    if (start < 0)
        start = 0;
    Py_ssize_t stop = end - RECORD_BATCH_OVERHEAD + 1;
    if (limit < stop)
        stop = limit;
    long long spent = 0;
    Py_ssize_t found = -1;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t i = start + 16;
    while (i < stop + 16) {
        const uint8_t *hit = memchr(buf + i, 2, (size_t)(stop + 16 - i));
        if (!hit)
            break;
        Py_ssize_t p = (Py_ssize_t)(hit - buf) - 16;
        i = p + 17;
        Py_ssize_t q = plausible(buf, p, end);
        if (q < 0)
            continue;
        Py_ssize_t r = q == end ? end : plausible(buf, q, end);
        if (r < 0)
            continue;
        spent += q - p - CRC_START;
        if (spent > budget) {
            found = -2;
            break;
        }
        if (!crc_ok(buf, p, q))
            continue;
        if (q == end) {
            found = p;
            break;
        }
        spent += r - q - CRC_START;
        if (spent > budget) {
            found = -2;
            break;
        }
        if (crc_ok(buf, q, r)) {
            found = p;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("(nL)", found, spent);
}
