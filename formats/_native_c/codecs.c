/* v2 records sections decompressed in C: the twin of codecs.decompress(codec, data, magic=2) for gzip,
 * snappy (xerial framing or one raw block), LZ4 (Kafka's frame) and zstd, with the decoders built into this
 * extension (codec_libs.h: libdeflate, zstd, LZ4; snappy here) and the same bound
 * (limits.max_decompressed_bytes(), or the one a codecs.V2Decompressor carries).
 *
 * Each codec is read in two steps: its framing gives the size of the output (exact for gzip and snappy, an
 * upper bound for LZ4 and zstd), then the decoder writes into a buffer of that size: the Python object
 * returned (no copy), or a caller's scratch buffer reused batch after batch (verify, which only checks
 * the records). Only the usual shapes are taken (one gzip member with a plain header, chunks of a xerial
 * stream, a frame of independent LZ4 blocks, whole zstd frames within the window zstd's streaming decoder
 * accepts): anything else, any check that fails, and output above the bound return "not here", and the
 * caller runs codecs.decompress, which decodes or reports it exactly. What is decoded here is therefore
 * what the pure path decodes, byte for byte (tests/test_native_parity.py, tests/test_codecs.py).
 *
 *   kl_fast_decompress(codec, buf, start, end, bound)   (bound < 0: limits.max_decompressed_bytes())
 *     -> the decompressed section (bytes, or a bytearray above 8 MiB as codecs._result gives it);
 *        NULL with no error: the pure path decides; NULL with an error set: a BaseException that must
 *        propagate.
 *   kl_decompress_scratch(codec, p, n, bound, scratch, &len) -> 1 decoded into scratch->p, 0 not here
 */
#include "native.h"
#include "codec_libs.h"

#define LZ4_STORED 0x80000000u
#define BYTES_MAX (8 * 1024 * 1024)
#define ZSTD_WINDOW_MAX (1ULL << 27)           /* ZSTD_WINDOWLOG_LIMIT_DEFAULT: the streaming decoder's limit */

static PyObject *LimitsModule;

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

/* --- gzip: one member, header without optional fields (what Java's GZIPOutputStream and zlib write) ---
 * codecs._gunzip reads further members and skips bytes after the last; those go to it. */
static long long gzip_size(const uint8_t *s, Py_ssize_t n) {
    if (n < 18 || s[0] != 0x1F || s[1] != 0x8B || s[2] != 8 || s[3] != 0)
        return -1;
    return rd_le32(s + n - 4);                 /* ISIZE: checked against the output below */
}

static int gzip_decode(const uint8_t *s, Py_ssize_t n, uint8_t *out, size_t cap, size_t *len) {
    size_t used, got;
    if (!kl_inflate(s + 10, (size_t)(n - 18), out, cap, &used, &got) || used != (size_t)(n - 18))
        return 0;                              /* the member does not end at the trailer: not one member */
    if (rd_le32(s + n - 8) != kl_crc32(0, out, got) || rd_le32(s + n - 4) != (uint32_t)got)
        return 0;
    *len = got;
    return 1;
}

/* --- snappy: xerial chunks (snappy-java's SnappyInputStream) or the whole input as one raw block ---- */
static const uint8_t XERIAL_MAGIC[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

/* a raw block's length (its uvarint, at most 32 bits): bytes read, 0 when unusual */
static int snappy_length(const uint8_t *p, Py_ssize_t n, uint32_t *out) {
    uint64_t v = 0;
    for (int i = 0; i < 5 && i < n; i++) {
        v |= (uint64_t)(p[i] & 0x7F) << (7 * i);
        if (!(p[i] & 0x80)) {
            if (v > UINT32_MAX)
                return 0;
            *out = (uint32_t)v;
            return i + 1;
        }
    }
    return 0;
}

/* a snappy copy: ``len`` bytes from ``off`` bytes back (already checked: 0 < off <= written); ``room``: the
 * bytes writable at ``d``. Where room allows, 16 or 8 bytes move at a time (the last chunk may write past
 * ``len``, bytes the next ops overwrite); a chunk never overlaps what it reads. */
static inline void copy_back(uint8_t *d, size_t off, size_t len, size_t room) {
    const uint8_t *from = d - off;
    if (off >= 16 && room >= len + 16) {
        for (size_t i = 0; i < len; i += 16)
            memcpy(d + i, from + i, 16);
    } else if (off >= 8 && room >= len + 8) {
        for (size_t i = 0; i < len; i += 8)
            memcpy(d + i, from + i, 8);
    } else {
        for (size_t i = 0; i < len; i++)
            d[i] = from[i];
    }
}

/* one raw snappy block (after its length) into exactly ``size`` bytes: 1, or 0 when it is not valid.
 * Short literals and copies move 16 or 8 bytes at a time where the input and the output have room for it
 * (never past either end); the checks are those of the format: every length within the input and the
 * output, every offset within what was written (0 is not an offset), the output filled exactly. */
static int snappy_block(const uint8_t *s, size_t n, uint8_t *out, size_t size) {
    size_t ip = 0, op = 0;
    while (ip < n) {
        size_t len, off;
        /* fast: the input holds any tag with its offset bytes (and 16 bytes of a short literal), the output
         * room for any copy (at most 64) and 16 bytes beyond; only the offset needs checking */
        if (n - ip >= 21 && size - op >= 80) {
            uint8_t tag = s[ip++];
            uint8_t *d = out + op;
            if (!(tag & 3)) {
                len = (tag >> 2) + 1;
                if (len <= 16) {
                    memcpy(d, s + ip, 16);
                    ip += len;
                    op += len;
                    continue;
                }
                ip--;                              /* a long literal: below */
            } else {
                uint32_t trailer = rd_le32(s + ip);
                if ((tag & 3) == 1) {
                    len = 4 + ((tag >> 2) & 7);
                    off = ((size_t)(tag >> 5) << 8) | (trailer & 0xFF);
                    ip += 1;
                } else if ((tag & 3) == 2) {
                    len = 1 + (tag >> 2);
                    off = trailer & 0xFFFF;
                    ip += 2;
                } else {
                    len = 1 + (tag >> 2);
                    off = trailer;
                    ip += 4;
                }
                if (off - 1 >= op)                  /* 0, or before the output's start */
                    return 0;
                copy_back(d, off, len, size - op);
                op += len;
                continue;
            }
        }
        uint8_t tag = s[ip++];
        switch (tag & 3) {
        case 0:                                 /* literal: length - 1 in the tag, or in 1-4 bytes after it */
            len = (tag >> 2) + 1;
            if (len <= 16 && n - ip >= 16 && size - op >= 16) {      /* the fast path's, near the ends */
                memcpy(out + op, s + ip, 16);
                ip += len;
                op += len;
                continue;
            }
            if (len > 60) {
                size_t extra = len - 60;
                if (n - ip < extra)
                    return 0;
                len = 0;
                for (size_t i = 0; i < extra; i++)
                    len |= (size_t)s[ip + i] << (8 * i);
                len += 1;
                ip += extra;
            }
            if (n - ip < len || size - op < len)
                return 0;
            memcpy(out + op, s + ip, len);
            ip += len;
            op += len;
            continue;
        case 1:                                 /* copy, 11-bit offset, length 4-11 */
            if (ip >= n)
                return 0;
            len = 4 + ((tag >> 2) & 7);
            off = ((size_t)(tag >> 5) << 8) | s[ip++];
            break;
        case 2:                                 /* copy, 16-bit offset, length 1-64 */
            if (n - ip < 2)
                return 0;
            len = 1 + (tag >> 2);
            off = (size_t)s[ip] | ((size_t)s[ip + 1] << 8);
            ip += 2;
            break;
        default:                                /* copy, 32-bit offset, length 1-64 */
            if (n - ip < 4)
                return 0;
            len = 1 + (tag >> 2);
            off = rd_le32(s + ip);
            ip += 4;
            break;
        }
        if (off == 0 || off > op || size - op < len)
            return 0;
        copy_back(out + op, off, len, size - op);
        op += len;
    }
    return op == size;
}

/* the output size of the section: the sum of its blocks' lengths; -1 when unusual */
static long long snappy_size(const uint8_t *s, Py_ssize_t n) {
    uint32_t size;
    if (n == 0)
        return -1;
    if (n < 16 || memcmp(s, XERIAL_MAGIC, 8) != 0)
        return snappy_length(s, n, &size) ? (long long)size : -1;
    long long total = 0;
    Py_ssize_t pos = 16;                        /* the header's version fields are not checked (snappy-java) */
    while (n - pos >= 4) {                      /* 1-3 trailing bytes end the stream, as in snappy-java */
        int32_t chunk = rd_i32(s + pos);
        if (chunk < 0 || chunk > n - pos - 4)   /* a concatenated stream's header, or a bad length */
            return -1;
        if (!snappy_length(s + pos + 4, chunk, &size))
            return -1;
        total += size;
        pos += 4 + chunk;
    }
    return total;
}

static int snappy_decode(const uint8_t *s, Py_ssize_t n, uint8_t *out, size_t cap, size_t *len) {
    uint32_t size;
    int k;
    if (n < 16 || memcmp(s, XERIAL_MAGIC, 8) != 0) {
        if (!(k = snappy_length(s, n, &size)) || size > cap || !snappy_block(s + k, (size_t)(n - k), out, size))
            return 0;
        *len = size;
        return 1;
    }
    size_t op = 0;
    Py_ssize_t pos = 16;
    while (n - pos >= 4) {
        int32_t chunk = rd_i32(s + pos);
        const uint8_t *b = s + pos + 4;
        if (!(k = snappy_length(b, chunk, &size)) || size > cap - op ||
            !snappy_block(b + k, (size_t)(chunk - k), out + op, size))
            return 0;
        op += size;
        pos += 4 + chunk;
    }
    *len = op;
    return 1;
}

/* --- LZ4: Kafka's frame (Lz4BlockInputStream, magic 2: the header checksum is checked) ---------------- */
typedef struct {
    Py_ssize_t pos;                             /* the first block's size word */
    Py_ssize_t max_block;
    int checked;                                /* blocks carry an xxh32 */
} lz4_frame;

static int lz4_header(const uint8_t *s, Py_ssize_t n, lz4_frame *f) {
    if (n < 6 || memcmp(s, "\x04\x22\x4d\x18", 4) != 0)
        return 0;
    uint8_t flg = s[4], bd = s[5];
    int bsize = (bd >> 4) & 7;
    if ((flg & 3) || !(flg & 0x20) || (flg >> 6) != 1 || (bd & 0x0F) || bsize < 4 || (bd & 0x80))
        return 0;
    f->max_block = (Py_ssize_t)1 << (2 * bsize + 8);
    Py_ssize_t pos = 6 + ((flg & 0x08) ? 8 : 0);
    if (pos >= n || s[pos] != ((kl_xxh32(s + 4, (size_t)(pos - 4), 0) >> 8) & 0xFF))
        return 0;
    f->pos = pos + 1;
    f->checked = (flg & 0x10) != 0;
    return 1;
}

/* walk the blocks; with out == NULL only sum their largest output (stored: their size); -1 unusual */
static long long lz4_walk(const uint8_t *s, Py_ssize_t n, uint8_t *out, size_t cap) {
    lz4_frame f;
    if (!lz4_header(s, n, &f))
        return -1;
    Py_ssize_t pos = f.pos;
    long long total = 0;
    for (;;) {
        if (n - pos < 4)
            return -1;
        uint32_t word = rd_le32(s + pos);
        Py_ssize_t size = (Py_ssize_t)(word & ~LZ4_STORED);
        if (size == 0)                          /* the end mark (with the stored bit too, as Kafka reads it) */
            return (s[4] & 0x04) && n - pos - 4 < 4 ? -1 : total;
        if (size > f.max_block)
            return -1;
        Py_ssize_t start = pos + 4;
        if (n - start < size + (f.checked ? 4 : 0))
            return -1;
        if (!out) {
            total += (word & LZ4_STORED) ? size : f.max_block;
        } else {
            if (f.checked && kl_xxh32(s + start, (size_t)size, 0) != rd_le32(s + start + size))
                return -1;
            if (word & LZ4_STORED) {
                if ((size_t)size > cap - (size_t)total)
                    return -1;
                memcpy(out + total, s + start, (size_t)size);
                total += size;
            } else {
                if ((size_t)f.max_block > cap - (size_t)total)   /* a block may fill max_block, as in Python */
                    return -1;
                int got = kl_lz4_block(s + start, (int)size, out + total, (int)f.max_block);
                if (got < 0)
                    return -1;
                total += got;
            }
        }
        pos = start + size + (f.checked ? 4 : 0);
    }
}

static long long lz4_size(const uint8_t *s, Py_ssize_t n) { return lz4_walk(s, n, NULL, 0); }

static int lz4_decode(const uint8_t *s, Py_ssize_t n, uint8_t *out, size_t cap, size_t *len) {
    long long r = lz4_walk(s, n, out, cap);
    if (r < 0)
        return 0;
    *len = (size_t)r;
    return 1;
}

/* --- zstd: whole frames (and skippable frames) in a row, each within the streaming decoder's window ---- */
static long long zstd_size(const uint8_t *s, Py_ssize_t n) {
    if (n == 0)
        return -1;
    for (Py_ssize_t pos = 0; pos < n;) {
        unsigned long long window;
        size_t f = kl_zstd_frame_size(s + pos, (size_t)(n - pos), &window);
        if (!f || window > ZSTD_WINDOW_MAX)
            return -1;
        pos += (Py_ssize_t)f;
    }
    return kl_zstd_bound(s, (size_t)n);
}

static int zstd_decode(const uint8_t *s, Py_ssize_t n, uint8_t *out, size_t cap, size_t *len) {
    size_t op = 0;
    for (Py_ssize_t pos = 0; pos < n;) {
        unsigned long long window;
        size_t f = kl_zstd_frame_size(s + pos, (size_t)(n - pos), &window), got;
        if (!f || window > ZSTD_WINDOW_MAX || !kl_zstd_frame(s + pos, f, out + op, cap - op, &got))
            return 0;
        op += got;
        pos += (Py_ssize_t)f;
    }
    *len = op;
    return 1;
}

/* --- the two entry points ------------------------------------------------------------------------- */
static long long section_size(int codec, const uint8_t *s, Py_ssize_t n) {
    switch (codec) {
    case 1: return gzip_size(s, n);
    case 2: return snappy_size(s, n);
    case 3: return lz4_size(s, n);
    case 4: return zstd_size(s, n);
    default: return -1;
    }
}

static int section_decode(int codec, const uint8_t *s, Py_ssize_t n, uint8_t *out, size_t cap, size_t *len) {
    switch (codec) {
    case 1: return gzip_decode(s, n, out, cap, len);
    case 2: return snappy_decode(s, n, out, cap, len);
    case 3: return lz4_decode(s, n, out, cap, len);
    case 4: return zstd_decode(s, n, out, cap, len);
    default: return 0;
    }
}

/* the bound to apply (bound < 0: the one in force); -1 with an error set, or -2: the pure path decides */
static long long resolve_bound(long long bound) {
    if (bound >= 0)
        return bound;
    bound = max_output();
    if (bound >= 0)
        return bound;
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyErr_Clear();
    return -2;
}

int kl_decompress_scratch(int codec, const uint8_t *s, Py_ssize_t n, long long bound, kl_scratch *sc, size_t *len) {
    long long size = section_size(codec, s, n);
    if (size < 0 || size > bound)
        return 0;
    if ((size_t)size > sc->cap || !sc->p) {
        size_t cap = (size_t)size < 65536 ? 65536 : (size_t)size;
        free(sc->p);                            /* no realloc: the old bytes need not be kept */
        if (!(sc->p = malloc(cap))) {
            sc->cap = 0;
            return 0;
        }
        sc->cap = cap;
    }
    return section_decode(codec, s, n, sc->p, (size_t)size, len);
}

void kl_scratch_free(kl_scratch *sc) {
    free(sc->p);
    sc->p = NULL;
    sc->cap = 0;
}

/* the output object of ``len`` bytes: bytes up to 8 MiB, else a bytearray (codecs._result) */
static PyObject *new_output(Py_ssize_t len) {
    return len <= BYTES_MAX ? PyBytes_FromStringAndSize(NULL, len) : PyByteArray_FromStringAndSize(NULL, len);
}

static uint8_t *output_ptr(PyObject *o) {
    return (uint8_t *)(PyBytes_Check(o) ? PyBytes_AS_STRING(o) : PyByteArray_AS_STRING(o));
}

/* LZ4 and zstd give only an upper bound of their size: up to 8 MiB they are decoded into this buffer
 * (kept between calls; the GIL serialises its users) and copied out at their exact size, rather than into
 * an object of the bound's size, whose fresh pages would be faulted in and given back at every batch;
 * above it, straight into a bytearray of the bound's size, shrunk to the output (never held twice) */
static kl_scratch shared;

static PyObject *decode_object(int codec, const uint8_t *s, Py_ssize_t n, long long size) {
    size_t len;
    if (codec == 1 || codec == 2) {                      /* the exact size: decoded in place */
        PyObject *r = new_output((Py_ssize_t)size);
        if (r && (!section_decode(codec, s, n, output_ptr(r), (size_t)size, &len) || (long long)len != size))
            Py_CLEAR(r);
        return r;
    }
    if (size > BYTES_MAX) {
        PyObject *r = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)size);
        if (!r || !section_decode(codec, s, n, output_ptr(r), (size_t)size, &len)) {
            Py_XDECREF(r);
            return NULL;
        }
        if (len <= BYTES_MAX) {                          /* codecs._result: bytes up to 8 MiB */
            PyObject *b = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(r), (Py_ssize_t)len);
            Py_DECREF(r);
            return b;
        }
        if (PyByteArray_Resize(r, (Py_ssize_t)len) < 0)
            Py_CLEAR(r);
        return r;
    }
    if ((size_t)size > shared.cap || !shared.p) {
        size_t cap = (size_t)size < (1 << 20) ? (1 << 20) : (size_t)size;
        free(shared.p);
        shared.cap = 0;
        if (!(shared.p = malloc(cap)))
            return PyErr_NoMemory();
        shared.cap = cap;
    }
    PyObject *r = NULL;
    if (section_decode(codec, s, n, shared.p, (size_t)size, &len) && (r = new_output((Py_ssize_t)len)))
        memcpy(output_ptr(r), shared.p, len);
    return r;
}

PyObject *kl_fast_decompress(int codec, PyObject *bufobj, Py_ssize_t start, Py_ssize_t end, long long bound) {
    if (codec < 1 || codec > 4)
        return NULL;
    if ((bound = resolve_bound(bound)) < 0)
        return NULL;
    Py_buffer v;
    if (PyObject_GetBuffer(bufobj, &v, PyBUF_SIMPLE) < 0) {
        if (PyErr_ExceptionMatches(PyExc_Exception))
            PyErr_Clear();
        return NULL;
    }
    PyObject *r = NULL;
    if (start >= 0 && end <= v.len && start <= end) {
        const uint8_t *s = (const uint8_t *)v.buf + start;
        long long size = section_size(codec, s, end - start);
        if (size >= 0 && size <= bound)
            r = decode_object(codec, s, end - start, size);
    }
    PyBuffer_Release(&v);
    if (!r && PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_Exception))
        PyErr_Clear();                          /* MemoryError too: the pure path decides */
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

/* the capsule through which records.c's call_decompress (in every extension built with it) reaches
 * kl_fast_decompress: added to the module by its init */
int kl_add_decompress_capsule(PyObject *module) {
    PyObject *c = PyCapsule_New((void *)kl_fast_decompress, KL_DECOMPRESS_CAPSULE, NULL);
    if (!c)
        return -1;
    if (PyModule_AddObject(module, "decompress_v2", c) < 0) {
        Py_DECREF(c);
        return -1;
    }
    return 0;
}
