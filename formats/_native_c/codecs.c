/* LZ4 and zstd records sections of v2 batches, unframed in C: the twin of codecs._unlz4 and codecs._unzstd
 * (Kafka's Lz4BlockInputStream and zstd-jni's streaming reader), line for line, with the same libraries
 * doing the decompression (lz4.block.decompress per LZ4 block, a zstandard decompressobj fed one block at a
 * time) and the same bound (limits.max_decompressed_bytes()). What the Python functions spend per batch is
 * their framing in Python; here it costs a few C calls.
 *
 *   kl_fast_decompress(codec, buf, start, end, bound)   (bound < 0: limits.max_decompressed_bytes())
 *     -> the decompressed section (bytes, or a bytearray above 8 MiB as codecs._result gives it);
 *        NULL with no error: anything unusual (a codec other than LZ4 or zstd, any check that fails,
 *        any library error, output above the bound) -- the caller runs codecs.decompress, which
 *        reports it exactly; NULL with an error set: a BaseException that must propagate.
 */
#include "native.h"

#define LZ4_STORED 0x80000000u
#define BYTES_MAX (8 * 1024 * 1024)

static PyObject *Lz4Decompress, *CodecsModule, *LimitsModule;

/* --- xxHash32 (for the LZ4 frame descriptor's header checksum), from the xxHash specification --------- */
static const uint32_t P1 = 2654435761U, P2 = 2246822519U, P3 = 3266489917U, P4 = 668265263U, P5 = 374761393U;

static inline uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static inline uint32_t rd_le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

uint32_t kl_xxh32(const uint8_t *p, size_t len, uint32_t seed) {
    const uint8_t *end = p + len;
    uint32_t h;
    if (len >= 16) {
        uint32_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        const uint8_t *limit = end - 16;
        do {
            v1 = rotl(v1 + rd_le32(p) * P2, 13) * P1;
            v2 = rotl(v2 + rd_le32(p + 4) * P2, 13) * P1;
            v3 = rotl(v3 + rd_le32(p + 8) * P2, 13) * P1;
            v4 = rotl(v4 + rd_le32(p + 12) * P2, 13) * P1;
            p += 16;
        } while (p <= limit);
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    } else {
        h = seed + P5;
    }
    h += (uint32_t)len;
    while (p + 4 <= end) {
        h = rotl(h + rd_le32(p) * P3, 17) * P4;
        p += 4;
    }
    while (p < end) {
        h = rotl(h + (*p) * P5, 11) * P1;
        p++;
    }
    h ^= h >> 15;
    h *= P2;
    h ^= h >> 13;
    h *= P3;
    h ^= h >> 16;
    return h;
}

/* the bound in force: limits.max_decompressed_bytes() (a module global, read at each call); -1: error */
static long long max_output(void) {
    if (!LimitsModule && !(LimitsModule = PyImport_ImportModule("kafkalog_formats.limits")))
        return -1;
    PyObject *v = PyObject_GetAttrString(LimitsModule, "_max_decompressed");
    if (!v)
        return -1;
    long long m = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return m;
}

static PyObject *finish(gbuf *out) {
    /* codecs._result: bytes up to 8 MiB, else the bytearray it was built in */
    if (out->len <= BYTES_MAX) {
        PyObject *b = PyBytes_FromStringAndSize(gbuf_ptr(out), out->len);
        gbuf_clear(out);
        return b;
    }
    return gbuf_finish(out);
}

#define FALLBACK()                                                                                         \
    do {                                                                                                   \
        gbuf_clear(&out);                                                                                  \
        return NULL;                                                                                       \
    } while (0)

/* codecs._unlz4 for magic 2 */
static PyObject *unlz4(const uint8_t *mv, Py_ssize_t n, long long bound) {
    gbuf out = {0};
    if (n < 6 || memcmp(mv, "\x04\x22\x4d\x18", 4) != 0)
        return NULL;
    uint8_t flg = mv[4], bd = mv[5];
    int bsize = (bd >> 4) & 7;
    if ((flg & 3) || !(flg & 0x20) || (flg >> 6) != 1 || (bd & 0x0F) || bsize < 4 || (bd & 0x80))
        return NULL;
    Py_ssize_t max_block = (Py_ssize_t)1 << (2 * bsize + 8);
    Py_ssize_t pos = 6 + ((flg & 0x08) ? 8 : 0);
    if (pos >= n || mv[pos] != ((kl_xxh32(mv + 4, (size_t)(pos - 4), 0) >> 8) & 0xFF))
        return NULL;
    pos++;
    int checked = (flg & 0x10) != 0;
    if (!Lz4Decompress) {
        PyObject *m = PyImport_ImportModule("lz4.block");
        if (!m) {
            PyErr_Clear();
            return NULL;
        }
        Lz4Decompress = PyObject_GetAttrString(m, "decompress");
        Py_DECREF(m);
        if (!Lz4Decompress) {
            PyErr_Clear();
            return NULL;
        }
    }
    if (gbuf_init(&out, NULL, 0) < 0) {
        PyErr_Clear();
        return NULL;
    }
    for (;;) {
        if (n - pos < 4)
            FALLBACK();
        uint32_t word = rd_le32(mv + pos);
        uint32_t stored = word & LZ4_STORED;
        Py_ssize_t size = (Py_ssize_t)(word & ~LZ4_STORED);
        if (size == 0) {                     /* the end mark (with the stored bit too, as Kafka reads it) */
            if ((flg & 0x04) && n - pos - 4 < 4)
                FALLBACK();
            return finish(&out);
        }
        if (size > max_block)
            FALLBACK();
        Py_ssize_t start = pos + 4;
        if (n - start < size + (checked ? 4 : 0))
            FALLBACK();
        if (checked && kl_xxh32(mv + start, (size_t)size, 0) != rd_le32(mv + start + size))
            FALLBACK();
        if (stored) {
            if (out.len + size > bound || gbuf_put(&out, mv + start, size) < 0)
                FALLBACK();
        } else {
            PyObject *block = PyMemoryView_FromMemory((char *)(mv + start), size, PyBUF_READ);
            PyObject *dec = NULL;
            if (block) {
                PyObject *kw = Py_BuildValue("{s:n}", "uncompressed_size", max_block);
                PyObject *a = PyTuple_Pack(1, block);
                if (kw && a)
                    dec = PyObject_Call(Lz4Decompress, a, kw);
                Py_XDECREF(kw);
                Py_XDECREF(a);
                Py_DECREF(block);
            }
            if (!dec) {
                if (!PyErr_ExceptionMatches(PyExc_Exception)) {
                    gbuf_clear(&out);
                    return NULL;                 /* KeyboardInterrupt and the like: propagate */
                }
                PyErr_Clear();
                FALLBACK();
            }
            char *db;
            Py_ssize_t dl;
            if (PyBytes_AsStringAndSize(dec, &db, &dl) < 0 || gbuf_put(&out, db, dl) < 0) {
                Py_DECREF(dec);
                PyErr_Clear();
                FALLBACK();
            }
            Py_DECREF(dec);
        }
        if (out.len > bound)
            FALLBACK();
        pos = start + size + (checked ? 4 : 0);
    }
}

/* codecs._zstd_cuts: the ends of the blocks of the frame at ``pos``, then n */
static Py_ssize_t zstd_cuts(const uint8_t *mv, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t *cuts, Py_ssize_t cap) {
    Py_ssize_t k = 0;
    if (n - pos >= 8) {
        uint32_t magic = rd_le32(mv + pos);
        if ((magic & 0xFFFFFFF0u) == 0x184D2A50u) {
            int64_t e = pos + 8 + (int64_t)rd_le32(mv + pos + 4);
            if (k < cap)
                cuts[k++] = (Py_ssize_t)(e < n ? e : n);
        } else if (magic == 0xFD2FB528u) {
            uint8_t fhd = mv[pos + 4];
            int single = (fhd >> 5) & 1;
            static const int did[] = {0, 1, 2, 4}, fcs[] = {0, 2, 4, 8};
            Py_ssize_t p = pos + 5 + (1 - single) + did[fhd & 3] + ((fhd >> 6) ? fcs[fhd >> 6] : single);
            while (p + 3 <= n) {
                uint32_t head = mv[p] | ((uint32_t)mv[p + 1] << 8) | ((uint32_t)mv[p + 2] << 16);
                uint32_t kind = (head >> 1) & 3, size = head >> 3;
                if (kind == 3)
                    break;
                p += 3 + (kind == 1 ? 1 : (Py_ssize_t)size);
                if (head & 1) {                  /* last block, then the optional content checksum */
                    Py_ssize_t e = p + ((fhd & 4) ? 4 : 0);
                    if (k < cap)
                        cuts[k++] = e < n ? e : n;
                    return k;                    /* the generator returns here: no final n */
                }
                if (p >= n)
                    break;
                if (k < cap)
                    cuts[k++] = p;
            }
        }
    }
    if (k < cap)
        cuts[k++] = n;
    return k;
}

/* codecs._unzstd */
static PyObject *unzstd(const uint8_t *mv, Py_ssize_t n, long long bound) {
    gbuf out = {0};
    if (!n)
        return NULL;
    if (!CodecsModule && !(CodecsModule = PyImport_ImportModule("kafkalog_formats.codecs"))) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *dctx = PyObject_CallMethod(CodecsModule, "_dctx", NULL);
    if (!dctx) {
        PyErr_Clear();
        return NULL;
    }
    Py_ssize_t cap = n / 3 + 4;
    Py_ssize_t *cuts = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)cap);
    if (!cuts || gbuf_init(&out, NULL, 0) < 0) {
        PyMem_Free(cuts);
        Py_DECREF(dctx);
        PyErr_Clear();
        return NULL;
    }
    Py_ssize_t pos = 0;
    int ok = 1;
    while (ok && pos < n) {
        PyObject *obj = PyObject_CallMethod(dctx, "decompressobj", NULL);
        if (!obj) {
            ok = 0;
            break;
        }
        Py_ssize_t end = pos, k = zstd_cuts(mv, n, pos, cuts, cap);
        int eof = 0;
        for (Py_ssize_t i = 0; ok && i < k; i++) {
            Py_ssize_t cut = cuts[i];
            PyObject *chunk = PyMemoryView_FromMemory((char *)(mv + end), cut - end, PyBUF_READ);
            PyObject *dec = chunk ? PyObject_CallMethod(obj, "decompress", "O", chunk) : NULL;
            Py_XDECREF(chunk);
            char *db;
            Py_ssize_t dl;
            if (!dec || PyBytes_AsStringAndSize(dec, &db, &dl) < 0 || gbuf_put(&out, db, dl) < 0) {
                Py_XDECREF(dec);
                ok = 0;
                break;
            }
            Py_DECREF(dec);
            end = cut;
            if (out.len > bound) {
                ok = 0;
                break;
            }
            PyObject *e = PyObject_GetAttrString(obj, "eof");
            eof = e ? PyObject_IsTrue(e) : -1;
            Py_XDECREF(e);
            if (eof < 0) {
                ok = 0;
                break;
            }
            if (eof)
                break;
        }
        if (ok && !eof)
            ok = 0;                              /* a truncated frame: the Python path reports it */
        if (ok) {
            PyObject *u = PyObject_GetAttrString(obj, "unused_data");
            Py_ssize_t ul = u ? PyObject_Length(u) : -1;
            Py_XDECREF(u);
            if (ul < 0)
                ok = 0;
            else
                pos = end - ul;
        }
        Py_DECREF(obj);
    }
    PyMem_Free(cuts);
    Py_DECREF(dctx);
    if (!ok) {
        gbuf_clear(&out);
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;                         /* propagate KeyboardInterrupt and the like */
        PyErr_Clear();
        return NULL;
    }
    return finish(&out);
}

PyObject *kl_fast_decompress(int codec, PyObject *bufobj, Py_ssize_t start, Py_ssize_t end, long long bound) {
    if (codec != 3 && codec != 4)
        return NULL;
    if (bound < 0)
        bound = max_output();
    if (bound < 0) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;
        PyErr_Clear();
        return NULL;
    }
    Py_buffer v;
    if (PyObject_GetBuffer(bufobj, &v, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *r = NULL;
    if (start >= 0 && end <= v.len && start <= end) {
        const uint8_t *mv = (const uint8_t *)v.buf + start;
        r = codec == 3 ? unlz4(mv, end - start, bound) : unzstd(mv, end - start, bound);
    }
    PyBuffer_Release(&v);
    return r;
}

/* fast_decompress(codec, data, bound) -> the section, or None (codecs.decompress must do it) */
PyObject *kl_py_fast_decompress(PyObject *self, PyObject *args) {
    int codec;
    PyObject *data;
    long long bound;
    if (!PyArg_ParseTuple(args, "iOL", &codec, &data, &bound))
        return NULL;
    Py_buffer v;
    if (PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t n = v.len;
    PyBuffer_Release(&v);
    PyObject *r = kl_fast_decompress(codec, data, 0, n, bound < 0 ? 0 : bound);
    if (!r && !PyErr_Occurred())
        Py_RETURN_NONE;
    return r;
}

PyObject *kl_py_xxh32(PyObject *self, PyObject *args) {
    Py_buffer b;
    unsigned int seed = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &b, &seed))
        return NULL;
    uint32_t h = kl_xxh32(b.buf, (size_t)b.len, seed);
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(h);
}
