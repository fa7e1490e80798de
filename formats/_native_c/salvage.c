/* The resynchronisation scan of recover --salvage and of the readers' --salvage, in C: the compiled twin of
 * kafkalog_formats.resync.find (the pure reference; its docstring states the four rules a position must
 * meet). Only positions whose byte 16 is 2 are looked at (memchr), the cheap header rules and the next
 * header are tested before any CRC, and the CRC bytes spent are bounded.
 *
 *   resync_find(buf, start, limit, end, crc_budget[, drop]) -> (position, crc bytes)
 *     position: the first p in [start, limit) meeting rules 1-4 with batches ending by ``end``; -1 none;
 *     -2 the budget was spent first. With ``drop`` (``buf`` is a read-only map of a file), the pages a long
 *     CRC has passed are handed back as it goes (a candidate claiming a 2 GiB zero tail made it resident).
 *   resync_inside_record(buf, lo, p, q) -> bool: rule 5 (resync.inside_record).
 */
#include "native.h"
#include <sys/mman.h>
#include <unistd.h>

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

#define DROP_CHUNK ((size_t)8 << 20)

/* rule 3; with ``drop``, 8 MiB at a time, each chunk's whole pages released behind (MADV_DONTNEED: a
 * read-only shared map reads them again from the file when asked) */
static int crc_ok(const uint8_t *buf, Py_ssize_t p, Py_ssize_t q, int drop) {
    const uint8_t *at = buf + p + CRC_START;
    size_t n = (size_t)(q - p - CRC_START);
    if (!drop || n <= DROP_CHUNK)
        return kl_crc32c(0, at, n) == rd_u32(buf + p + 17);
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uint32_t crc = 0;
    while (n) {
        size_t k = n < DROP_CHUNK ? n : DROP_CHUNK;
        crc = kl_crc32c(crc, at, k);
        uintptr_t lo = ((uintptr_t)at + page - 1) & ~(page - 1), hi = ((uintptr_t)at + k) & ~(page - 1);
        if (hi > lo)
            madvise((void *)lo, hi - lo, MADV_DONTNEED);
        at += k;
        n -= k;
    }
    return crc == rd_u32(buf + p + 17);
}

PyObject *kl_resync_find(PyObject *self, PyObject *args) {
    PyObject *bufobj;
    Py_ssize_t start, limit, end;
    long long budget;
    int drop = 0;
    if (!PyArg_ParseTuple(args, "OnnnL|p", &bufobj, &start, &limit, &end, &budget, &drop))
        return NULL;
    Py_buffer view;
    if (kl_region(bufobj, &view, &start, &end) < 0)
        return NULL;
    const uint8_t *buf = view.buf;
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
        if (!crc_ok(buf, p, q, drop))
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
        if (crc_ok(buf, q, r, drop)) {
            found = p;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("(nL)", found, spent);
}

#define RECORD_WINDOW (1 << 20)

PyObject *kl_resync_inside_record(PyObject *self, PyObject *args) {
    PyObject *bufobj;
    Py_ssize_t lo, p, q;
    if (!PyArg_ParseTuple(args, "Onnn", &bufobj, &lo, &p, &q))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *buf = view.buf;
    if (q > view.len)
        q = view.len;
    if (p > q)
        p = q;
    if (lo < 0)
        lo = 0;
    int found = 0;
    /* the length varint (zig-zag) of a value of exactly the batch's size right before it */
    uint8_t v[10];
    int nv = 0;
    uint64_t z = (uint64_t)(q - p) << 1;
    while (z >= 0x80) {
        v[nv++] = (uint8_t)((z & 0x7F) | 0x80);
        z >>= 7;
    }
    v[nv++] = (uint8_t)z;
    if (p - nv >= lo && memcmp(buf + p - nv, v, (size_t)nv) == 0)
        found = 1;
    Py_ssize_t r = p - RECORD_WINDOW;
    if (r < lo)
        r = lo;
    for (; r < p && !found; r++) {
        Py_ssize_t body = r;
        int32_t length;
        if (rd_varint(buf, &body, q, &length) < 0 || length < 0 || body + length != q)
            continue;
        rcursor c;
        record_t rec;
        rcursor_init(&c, buf + r, q - r, 1, 0, 0, -1, 0, 0);
        found = rcursor_next(&c, &rec) == 1 && rcursor_next(&c, &rec) == 0;
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

/* salvage_walk(buf, start, end, segment_base, previous_last, previous_epoch, next_base, deep, decompress,
 *               max_bytes) -> (position, reason, batches, records, last offset or None, last epoch,
 *                              (position of the last batch, the last offset and epoch before it) or None)
 * The batches recover --salvage keeps as they are, walked in C (engine.salvage.SegmentWalk, the pure
 * reference, classifies every other one): whole v2 data batches (no control batch) with a good CRC, magic
 * 2, a last offset delta >= 0, a base offset above ``previous_last`` (None: no batch before) and not below
 * ``segment_base``, a last offset within segment_base + 2^31-1 and below ``next_base`` (None: no limit)
 * and below the base offsets of the two batches framed after it (headers read, no CRC), the partition leader epoch
 * of ``previous_epoch`` (-1: none; a batch starting another epoch is judged in Python, against the batches
 * after it) and not above the next batch's; with ``deep`` their
 * records decode (section_validate; compressed ones through ``decompress``). Stops before any other batch
 * ("python"), at the exact end ("end") or after ``max_bytes`` ("limit"). ``records`` sums the batches'
 * record counts. */
PyObject *kl_salvage_walk(PyObject *self, PyObject *args) {
    PyObject *bufobj, *prev_obj, *next_obj, *decompress;
    Py_ssize_t start, end, max_bytes;
    long long seg_base, prev_epoch;
    int deep;
    if (!PyArg_ParseTuple(args, "OnnLOLOpOn", &bufobj, &start, &end, &seg_base, &prev_obj, &prev_epoch, &next_obj,
                          &deep, &decompress, &max_bytes))
        return NULL;
    int has_prev = prev_obj != Py_None, has_next = next_obj != Py_None;
    long long prev = 0, next_base = 0;
    if (has_prev && ((prev = PyLong_AsLongLong(prev_obj)) == -1 && PyErr_Occurred()))
        return NULL;
    if (has_next && ((next_base = PyLong_AsLongLong(next_obj)) == -1 && PyErr_Occurred()))
        return NULL;
    Py_buffer view;
    if (kl_region(bufobj, &view, &start, &end) < 0)
        return NULL;
    const uint8_t *buf = view.buf;
    Py_ssize_t pos = start;
    const char *reason = "end";
    long long batches = 0, records = 0;
    int64_t last_kept = 0, before_last = 0, before_epoch = prev_epoch;
    int has_before = has_prev;
    Py_ssize_t last_pos = start;
    for (;;) {
        if (pos >= end) {
            reason = "end";
            break;
        }
        if (max_bytes > 0 && pos - start >= max_bytes) {
            reason = "limit";
            break;
        }
        batch_hdr h;
        if (kl_frame(buf, pos, end, &h) != 1 || h.magic != 2 || (h.attributes & 0x20) || (h.attributes & 7) > 4 ||
            h.last_offset_delta < 0 || h.count < 0) {
            reason = "python";
            break;
        }
        int64_t last;
        if (__builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last) || h.base_offset < seg_base ||
            last - seg_base > KL_INT_MAX || (has_prev && h.base_offset <= prev) || (has_next && last >= next_base)) {
            reason = "python";
            break;
        }
        if (prev_epoch >= 0 && h.partition_leader_epoch != prev_epoch) {   /* a new epoch: judged with the batches after it */
            reason = "python";
            break;
        }
        batch_hdr nx, nn;
        if (pos + h.size < end && kl_frame(buf, pos + h.size, end, &nx) == 1) {
            if (nx.base_offset <= last || (h.partition_leader_epoch >= 0 && nx.partition_leader_epoch < h.partition_leader_epoch)) {
                reason = "python";
                break;
            }
            /* the batch after that too: one odd batch must not vouch for this one (SegmentWalk._below_ahead) */
            if (pos + h.size + nx.size < end && kl_frame(buf, pos + h.size + nx.size, end, &nn) == 1 &&
                nn.base_offset <= last) {
                reason = "python";
                break;
            }
        }
        if (kl_crc32c(0, buf + pos + CRC_START, (size_t)(h.size - CRC_START)) != h.crc) {
            reason = "python";
            break;
        }
        if (deep) {
            section_t s;
            int has_horizon;
            long long horizon;
            int ok = batch_section(bufobj, pos, decompress, &s, &has_horizon, &horizon);
            Py_ssize_t n = 0;
            if (ok > 0)
                ok = section_validate(&s, &n);
            section_release(&s);
            if (ok < 0) {
                PyBuffer_Release(&view);
                return NULL;
            }
            if (ok == 0) {
                reason = "python";
                break;
            }
        }
        batches++;
        records += h.count;
        last_pos = pos;
        before_last = prev;
        has_before = has_prev;
        before_epoch = prev_epoch;
        prev = last;
        has_prev = 1;
        last_kept = last;
        if (h.partition_leader_epoch >= 0)
            prev_epoch = h.partition_leader_epoch;
        pos += (Py_ssize_t)h.size;
        if ((batches & 0xffff) == 0 && PyErr_CheckSignals() < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    PyBuffer_Release(&view);
    if (batches) {
        PyObject *before = has_before ? PyLong_FromLongLong(before_last) : Py_NewRef(Py_None);
        if (!before)
            return NULL;
        return Py_BuildValue("(nsLLLL(nNL))", pos, reason, batches, records, (long long)last_kept, prev_epoch,
                             last_pos, before, (long long)before_epoch);
    }
    return Py_BuildValue("(nsLLOLO)", pos, reason, batches, records, Py_None, prev_epoch, Py_None);
}
