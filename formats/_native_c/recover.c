/* recover's walk over a segment in C: the part of Kafka's LogSegment.recover (repair/segment_recovery
 * .recover_segment, the pure reference) that plain batches need, with no record decoded.
 *
 *   recover_run(buf, start, end, base_offset, interval, latest_epoch, state, offsets, times, max_bytes)
 *     -> (position, reason, batches, next offset or None)
 *
 * Takes consecutive v2 batches that are whole, pass their CRC, hold no control records and no producer id
 * (the producer state only moves its end offset), whose last offset fits the segment (base + 0..2^31-1),
 * whose leader epoch adds nothing to the epoch cache (below or at ``latest_epoch``, or negative), and whose
 * index entries keep increasing; for each it does what recover_segment's loop does: the per-batch index
 * rule (IndexBuilder.add: offset entry when more than ``interval`` bytes since the last one, time entry
 * when the running max grew), appending the new entries to ``offsets`` and ``times`` (int64 pairs) and
 * keeping the builder's state in ``state`` (8 int64: max timestamp, its offset, last indexed position,
 * offset entries, last entry offset, time entries, last time entry's timestamp and offset). The first
 * other batch stops the run *before* it ("python": the pure loop takes it and reports whatever it is),
 * as does the end of the bytes ("end") or ``max_bytes`` read ("limit", so the caller can release pages).
 */
#include "native.h"

enum { S_MAX_TS, S_OFFSET_OF_MAX, S_LAST_INDEXED, S_N_OFF, S_LAST_OFF, S_N_TIME, S_LAST_TIME_TS, S_LAST_TIME_OFF, S_N };

PyObject *kl_recover_run(PyObject *self, PyObject *args) {
    PyObject *bufobj, *stateobj, *offobj, *timeobj;
    Py_ssize_t start, end, max_bytes;
    long long base_offset, interval, latest_epoch;
    if (!PyArg_ParseTuple(args, "OnnLLLOOOn", &bufobj, &start, &end, &base_offset, &interval, &latest_epoch,
                          &stateobj, &offobj, &timeobj, &max_bytes))
        return NULL;
    if (!PyByteArray_Check(stateobj) || PyByteArray_GET_SIZE(stateobj) != S_N * 8 || !PyByteArray_Check(offobj) ||
        !PyByteArray_Check(timeobj)) {
        PyErr_SetString(PyExc_TypeError, "recover_run: state must be a bytearray of 8 int64, offsets and times "
                                         "bytearrays");
        return NULL;
    }
    Py_buffer view;
    if (kl_region(bufobj, &view, &start, &end) < 0)
        return NULL;
    const uint8_t *buf = view.buf;
    int64_t st[S_N];
    memcpy(st, PyByteArray_AS_STRING(stateobj), sizeof(st));
    gbuf offs, times;
    if (gbuf_init(&offs, offobj, 0) < 0 || gbuf_init(&times, timeobj, 0) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t pos = start;
    const char *reason = "end";
    long long batches = 0;
    int64_t next_offset = 0;
    for (;;) {
        if (max_bytes > 0 && pos - start >= max_bytes) {
            reason = "limit";
            break;
        }
        Py_ssize_t left = end - pos;
        if (left <= 0) {
            reason = "end";
            break;
        }
        const uint8_t *p = buf + pos;
        int32_t length = left > HEADER_SIZE_UP_TO_MAGIC ? rd_i32(p + 8) : 0;
        int64_t size = LOG_OVERHEAD + (int64_t)length;
        if (left <= HEADER_SIZE_UP_TO_MAGIC || length < RECORD_OVERHEAD_V0 || size > left || (int8_t)p[16] != 2 ||
            size < RECORD_BATCH_OVERHEAD || size > NATIVE_MAX_BATCH) {
            reason = "python";
            break;
        }
        batch_hdr h;
        parse_batch_header(p, pos, &h);
        int64_t last;
        if ((h.attributes & 0x20) || h.producer_id >= 0 ||
            __builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last) ||
            last < base_offset || last - base_offset > KL_INT_MAX) {
            reason = "python";
            break;
        }
        if (h.partition_leader_epoch >= 0 && h.base_offset >= 0 && h.partition_leader_epoch > latest_epoch) {
            reason = "python";                /* EpochCache.assign adds an entry */
            break;
        }
        if (kl_crc32c(0, p + CRC_START, (size_t)(size - CRC_START)) != h.crc) {
            reason = "python";
            break;
        }
        int64_t max_ts = st[S_MAX_TS], om = st[S_OFFSET_OF_MAX];
        if (h.max_timestamp > max_ts) {
            max_ts = h.max_timestamp;
            om = last;
        }
        if ((int64_t)pos - st[S_LAST_INDEXED] > interval) {
            /* OffsetIndex.append / TimeIndex.maybeAppend would throw InvalidOffsetException: the pure loop
             * takes this batch and empties the segment */
            if ((st[S_N_OFF] && last <= st[S_LAST_OFF]) || (st[S_N_TIME] && om < st[S_LAST_TIME_OFF])) {
                reason = "python";
                break;
            }
            int64_t pair[2] = {last, (int64_t)pos};
            if (gbuf_put_i64s(&offs, pair, 2) < 0)
                goto error;
            st[S_N_OFF]++;
            st[S_LAST_OFF] = last;
            int64_t last_ts = st[S_N_TIME] ? st[S_LAST_TIME_TS] : -1;
            if (max_ts > last_ts) {
                int64_t tp[2] = {max_ts, om};
                if (gbuf_put_i64s(&times, tp, 2) < 0)
                    goto error;
                st[S_N_TIME]++;
                st[S_LAST_TIME_TS] = max_ts;
                st[S_LAST_TIME_OFF] = om;
            }
            st[S_LAST_INDEXED] = pos;
        }
        st[S_MAX_TS] = max_ts;
        st[S_OFFSET_OF_MAX] = om;
        batches++;
        next_offset = last + 1;
        pos += (Py_ssize_t)size;
    }
    PyBuffer_Release(&view);
    /* the appended entries stay in the bytearrays (trimmed to what was written) */
    if (PyByteArray_Resize(offs.ba, offs.len) < 0 || PyByteArray_Resize(times.ba, times.len) < 0) {
        gbuf_clear(&offs);
        gbuf_clear(&times);
        return NULL;
    }
    gbuf_clear(&offs);
    gbuf_clear(&times);
    memcpy(PyByteArray_AS_STRING(stateobj), st, sizeof(st));
    if (batches)
        return Py_BuildValue("(nsLL)", pos, reason, batches, (long long)next_offset);
    return Py_BuildValue("(nsLO)", pos, reason, batches, Py_None);
error:
    PyBuffer_Release(&view);
    PyByteArray_Resize(offs.ba, offs.len);
    PyByteArray_Resize(times.ba, times.len);
    gbuf_clear(&offs);
    gbuf_clear(&times);
    return NULL;
}

/* header_walk(buf, start, end, from_offset, max_bytes)
 *   -> (position, reason, batches, next offset or None, last eligible offset or None, [positions])
 * The batch headers of a segment as BatchReader frames them (kl_frame), for the walks that need only
 * offsets and producer ids (segment_recovery.next_offset_of, replay_segment): the next offset after the
 * last batch, the largest-positioned batch's last offset at or above ``from_offset`` ("eligible"), and
 * the positions of eligible batches with a producer id (the producer state reads those one by one).
 * Stops before a batch the pure walk must read ("python": a legacy entry, a huge batch, offsets beyond
 * 64 bits), at a framing stop or the end ("end": BatchReader then says which), or after ``max_bytes``
 * ("limit"). */
PyObject *kl_header_walk(PyObject *self, PyObject *args) {
    PyObject *bufobj;
    Py_ssize_t start, end, max_bytes;
    long long from_offset;
    if (!PyArg_ParseTuple(args, "OnnLn", &bufobj, &start, &end, &from_offset, &max_bytes))
        return NULL;
    Py_buffer view;
    if (kl_region(bufobj, &view, &start, &end) < 0)
        return NULL;
    PyObject *positions = PyList_New(0);
    if (!positions) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t pos = start;
    const char *reason = "end";
    long long batches = 0;
    int64_t next_offset = 0, eligible = 0;
    int has_eligible = 0;
    for (;;) {
        if (max_bytes > 0 && pos - start >= max_bytes) {
            reason = "limit";
            break;
        }
        batch_hdr h;
        int fr = kl_frame(view.buf, pos, end, &h);
        if (fr <= 0) {
            reason = "end";
            break;
        }
        int64_t last;
        if (fr == 2 || __builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last)) {
            reason = "python";
            break;
        }
        if (last >= from_offset) {
            eligible = last;
            has_eligible = 1;
            if (h.producer_id >= 0) {
                PyObject *p = PyLong_FromSsize_t(pos);
                if (!p || PyList_Append(positions, p) < 0) {
                    Py_XDECREF(p);
                    Py_DECREF(positions);
                    PyBuffer_Release(&view);
                    return NULL;
                }
                Py_DECREF(p);
            }
        }
        batches++;
        next_offset = last + 1;
        pos += (Py_ssize_t)h.size;
    }
    PyBuffer_Release(&view);
    PyObject *nxt = batches ? PyLong_FromLongLong(next_offset) : Py_NewRef(Py_None);
    PyObject *elig = has_eligible ? PyLong_FromLongLong(eligible) : Py_NewRef(Py_None);
    if (!nxt || !elig) {
        Py_XDECREF(nxt);
        Py_XDECREF(elig);
        Py_DECREF(positions);
        return NULL;
    }
    return Py_BuildValue("(nsLNNN)", pos, reason, batches, nxt, elig, positions);
}
