/* kafkalog_formats._native: the compiled record path of the format layer (shared declarations).
 *
 * Every function here mirrors a pure-Python reference in kafkalog_formats (record_batch.iter_records,
 * message_set.BatchReader, columns, crc.crc32c); the Python seam that says which is kafkalog_formats.native.
 * The upper layers' extensions (kafkalog_cli.render._native_render: dump-log's line writers;
 * kafkalog_cli.repair._native_clean: the cleaner's offset map) are built from their own sources plus the
 * shared ones here (gbuf, varints, the batch header, the record cursor, sections, text writers: setup.py
 * lists them per extension); nothing here knows about rendering or cleaning. The pure path is the
 * reference: whenever the C code meets a batch it does not handle exactly (legacy magic, a record or
 * framing error, an int64 overflow, a control batch where the caller needs it decoded), it stops *before*
 * that batch and reports R_PYTHON, and the Python wrapper handles the batch with the reference code, so
 * reports stay identical by construction.
 *
 * Untrusted input: every length read from the bytes is checked against the end of its buffer before it
 * is used (record bodies, keys, values, headers, batch sizes); positions are Py_ssize_t, sums that could
 * overflow int64 are checked with __builtin_*_overflow.
 */
#ifndef KAFKALOG_NATIVE_H
#define KAFKALOG_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* the column layout and calling conventions of this header, exported by every extension built from it and
 * checked by its Python seam (a module built from another kafkalog version is not used) */
#define KL_LAYOUT_VERSION 4

/* --- growable byte buffer backed by a bytearray (columns and written text) ----------------------- */
typedef struct {
    PyObject *ba;          /* bytearray owning the bytes */
    Py_ssize_t len;        /* bytes used */
    Py_ssize_t cap;        /* bytes allocated in ba */
} gbuf;

int gbuf_init(gbuf *g, PyObject *existing, Py_ssize_t reserve);   /* existing: a bytearray to append to, or NULL */
int gbuf_grow(gbuf *g, Py_ssize_t extra);
PyObject *gbuf_finish(gbuf *g);                                       /* trims; returns a new reference */
void gbuf_clear(gbuf *g);

static inline char *gbuf_ptr(gbuf *g) { return PyByteArray_AS_STRING(g->ba); }

static inline int gbuf_reserve(gbuf *g, Py_ssize_t extra) {
    if (g->len + extra <= g->cap)
        return 0;
    return gbuf_grow(g, extra);
}

static inline int gbuf_put(gbuf *g, const void *p, Py_ssize_t n) {
    if (gbuf_reserve(g, n) < 0)
        return -1;
    memcpy(gbuf_ptr(g) + g->len, p, (size_t)n);
    g->len += n;
    return 0;
}

static inline int gbuf_put_i64s(gbuf *g, const int64_t *v, Py_ssize_t n) {
    return gbuf_put(g, v, n * (Py_ssize_t)sizeof(int64_t));
}

/* --- checksums -------------------------------------------------------------------------------- */
void kl_crc32c_init(void);
uint32_t kl_crc32c(uint32_t crc, const uint8_t *p, size_t n);
/* the bytes of ``obj`` (a buffer: a map, bytes) as ``view``, with ``[start, end)`` clamped into them; -1 with
 * Python's error set when ``obj`` is not a buffer (release ``view`` with PyBuffer_Release) */
static inline int kl_region(PyObject *obj, Py_buffer *view, Py_ssize_t *start, Py_ssize_t *end) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0)
        return -1;
    if (*end > view->len)
        *end = view->len;
    if (*start < 0)
        *start = 0;
    return 0;
}
   /* crc: previous final value, 0 to start */
const char *kl_crc32c_impl(void);

/* --- big-endian reads ------------------------------------------------------------------------- */
static inline int64_t rd_i64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}
static inline int32_t rd_i32(const uint8_t *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}
static inline uint32_t rd_u32(const uint8_t *p) { return (uint32_t)rd_i32(p); }
static inline int16_t rd_i16(const uint8_t *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }

/* --- v2 batch header (61 bytes; field order of record_batch.HEADER) ---------------------------- */
#define LOG_OVERHEAD 12
#define HEADER_SIZE_UP_TO_MAGIC 17
#define RECORD_OVERHEAD_V0 14
#define RECORD_BATCH_OVERHEAD 61
/* Batches larger than this (12 + length) are left to the pure path, which checks CRCs and zero tails
 * window by window and hands the mapped pages back as it goes: a 2 GiB batch claimed over a sparse hole
 * never becomes 2 GiB of resident memory (C reads a batch in one go). Healthy batches are far smaller. */
#define NATIVE_MAX_BATCH (32LL * 1024 * 1024)
/* A scan that turns records into rows (80 bytes each) leaves a batch declaring more records than this to
 * the pure path, which streams them: rows stay bounded (80 MiB a batch, beside at most the 128 MiB the
 * decompression bound lets a batch's records take) whatever the count claims. At 262,144 a batch of a
 * million small records (the fuzz harness's distinct keys) took dump-log 15x longer on the pure path. */
#define NATIVE_MAX_RECORDS 1048576
/* Likewise a batch whose records carry more headers than this (32 bytes of rows each: 32 MiB): ten million
 * two-byte headers fit a 2 KB zstd batch. The pure path keeps a record's many headers as their bytes
 * (record.RecordHeaders) and the renderers write them as they walk them. */
#define NATIVE_MAX_HEADERS 1048576
#define CRC_START 21
#define KL_INT_MAX 0x7FFFFFFFLL

typedef struct {
    int64_t position;
    int64_t size;                  /* 12 + length */
    int64_t base_offset;
    int32_t length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t count;
} batch_hdr;

void parse_batch_header(const uint8_t *p, int64_t position, batch_hdr *h);
/* framing of the batch at pos (BatchReader's rules): 1 a whole v2 batch (header in h), 2 a legacy entry or a batch
 * above NATIVE_MAX_BATCH (the pure path reads it), 0 the bytes ended, -1 a framing stop */
int kl_frame(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, batch_hdr *h);

/* --- one record of a v2 batch (record_batch.iter_records) --------------------------------------- */
typedef struct {
    const uint8_t *d;              /* uncompressed records section (or decompressed buffer) */
    Py_ssize_t pos, end;
    int64_t base_offset, base_timestamp, max_timestamp;
    int32_t base_sequence;
    int log_append_time;
    int32_t remaining;
} rcursor;

typedef struct {
    int64_t offset, timestamp, sequence;
    Py_ssize_t start;              /* position of the record's length varint */
    Py_ssize_t key_pos, value_pos, headers_pos;   /* headers_pos: first header (after the count) */
    int32_t key_len, value_len;    /* -1: null */
    int32_t header_count;
    int attributes;
} record_t;

/* returns 1: record decoded; 0: no more records and the section ended exactly; -1: the section is
 * invalid or a value does not fit int64 (the pure path reports it) */
int rcursor_init(rcursor *c, const uint8_t *d, Py_ssize_t len, int32_t count, int64_t base_offset,
                 int64_t base_timestamp, int32_t base_sequence, int log_append_time, int64_t max_timestamp);
int rcursor_next(rcursor *c, record_t *r);

/* walk the already-validated headers of a record: key/value spans (value_len -1: null) */
typedef struct { Py_ssize_t key_pos, value_pos; int32_t key_len, value_len; } header_t;
Py_ssize_t read_header(const uint8_t *d, Py_ssize_t pos, header_t *h);

int rd_varint(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t limit, int32_t *out);
int rd_varlong(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t limit, int64_t *out);

/* --- one records section for a per-record pass (section.c) ---------------------------------------- */
typedef struct {
    Py_buffer data;              /* what the bytes belong to (released by section_release) */
    PyObject *owner;             /* a decompressed section, or NULL */
    const uint8_t *d;
    Py_ssize_t len;
    rcursor c;
    int32_t count;
    long long base_offset, base_ts, max_ts;
    int base_seq, lat;
} section_t;

void section_release(section_t *s);
/* a section given as bytes: 0 ok, -1 error set */
int section_args(PyObject *dataobj, int count, long long base_offset, long long base_ts, int base_seq,
                 PyObject *lat_o, section_t *s);
int section_start(section_t *s);              /* rcursor_init's result */
/* the section of the v2 data batch at ``position``: 1 ok, 0 the pure path decides, -1 error set; release
 * it with section_release in every case */
int batch_section(PyObject *bufobj, Py_ssize_t position, PyObject *decompress, section_t *s,
                  int *has_horizon, long long *horizon);
int section_validate(section_t *s, Py_ssize_t *n);   /* 1 valid (``*n``: its records), 0 invalid */

/* --- columns layout (int64 rows), shared with kafkalog_formats.columns -------------------------- */
enum {
    B_POSITION, B_SIZE, B_BASE_OFFSET, B_LAST_OFFSET_DELTA, B_PARTITION_LEADER_EPOCH, B_MAGIC, B_CRC,
    B_ATTRIBUTES, B_BASE_TIMESTAMP, B_MAX_TIMESTAMP, B_PRODUCER_ID, B_PRODUCER_EPOCH, B_BASE_SEQUENCE,
    B_COUNT, B_CRC_VALID, B_FIRST_ROW, B_ROWS, B_SOURCE, B_DECODED, B_FIRST_HEADER, NB
};
enum {
    R_OFFSET, R_TIMESTAMP, R_KEY_POS, R_KEY_LEN, R_VALUE_POS, R_VALUE_LEN, R_FIRST_HEADER, R_HEADER_COUNT,
    R_SEQUENCE, R_ATTRIBUTES, NR
};
enum { H_KEY_POS, H_KEY_LEN, H_VALUE_POS, H_VALUE_LEN, NH };

/* stop reasons of scan / verify_walk */
enum { STOP_END = 0, STOP_FRAMING = 1, STOP_PYTHON = 2, STOP_LIMIT = 3, STOP_TO_OFFSET = 4 };

/* --- module-level functions, one file each ----------------------------------------------------- */
PyObject *kl_scan(PyObject *self, PyObject *args, PyObject *kw);
PyObject *kl_records(PyObject *self, PyObject *args, PyObject *kw);
PyObject *kl_verify_walk(PyObject *self, PyObject *args, PyObject *kw);
PyObject *kl_table_add(PyObject *self, PyObject *args);
PyObject *kl_gather(PyObject *self, PyObject *args, PyObject *kw);
PyObject *kl_batch_sound(PyObject *self, PyObject *args);
PyObject *kl_recover_run(PyObject *self, PyObject *args);
PyObject *kl_header_walk(PyObject *self, PyObject *args);
PyObject *kl_resync_find(PyObject *self, PyObject *args);
PyObject *kl_salvage_walk(PyObject *self, PyObject *args);
PyObject *kl_resync_inside_record(PyObject *self, PyObject *args);
PyObject *kl_coordinator_texts(PyObject *self, PyObject *args);
PyObject *kl_make_record(PyTypeObject *type, const uint8_t *d, const record_t *r);
PyObject *kl_set_record_headers(PyObject *self, PyObject *args);
PyObject *kl_header_pairs(PyObject *self, PyObject *args);
/* the last headers tuple made and its bytes (records of one batch often carry the same headers) */
typedef struct {
    PyObject *headers;
    int32_t count;
    Py_ssize_t len;
    uint8_t bytes[256];
} headers_cache;
PyObject *kl_make_record_cached(PyTypeObject *type, const uint8_t *d, const record_t *r, headers_cache *cache);
extern PyTypeObject BatchBaseType;
PyObject *kl_batch_iter(PyObject *self, PyObject *args);
PyObject *kl_set_batch_support(PyObject *self, PyObject *args);
uint32_t kl_xxh32(const uint8_t *p, size_t len, uint32_t seed);
/* codecs.c: a v2 records section decompressed in C (see there); only in kafkalog_formats._native, which
 * offers kl_fast_decompress to the other extensions as the capsule KL_DECOMPRESS_CAPSULE */
PyObject *kl_fast_decompress(int codec, PyObject *bufobj, Py_ssize_t start, Py_ssize_t end, long long bound);
typedef PyObject *(*kl_fast_decompress_fn)(int, PyObject *, Py_ssize_t, Py_ssize_t, long long);
#define KL_DECOMPRESS_CAPSULE "kafkalog_formats._native.decompress_v2"
int kl_add_decompress_capsule(PyObject *module);
typedef struct {
    uint8_t *p;                    /* malloc'd, reused batch after batch; kl_scratch_free releases it */
    size_t cap;
} kl_scratch;
int kl_decompress_scratch(int codec, const uint8_t *s, Py_ssize_t n, long long bound, kl_scratch *sc, size_t *len);
void kl_scratch_free(kl_scratch *sc);
PyObject *kl_py_fast_decompress(PyObject *self, PyObject *args);
PyObject *kl_py_xxh32(PyObject *self, PyObject *args);
PyObject *kl_adopt(PyObject *self, PyObject *args);

/* decompress(codec, view) for a compressed batch: in C when ``decompress`` is a codecs.V2Decompressor and
 * the section is one kl_fast_decompress takes, else a call of the Python ``decompress``; NULL with no error
 * set: the decompressor raised an Exception (the batch goes to the pure path); NULL with an error set: a
 * BaseException (KeyboardInterrupt...) that must propagate */
PyObject *call_decompress(PyObject *decompress, PyObject *bufobj, Py_ssize_t start, Py_ssize_t end, int codec);
/* 1 when ``decompress`` is a codecs.V2Decompressor whose work C may do (its bound in ``*bound``, -1: the
 * bound in force), 0 when it is another callable (or the compiled decompression is not there), -1 error */
int kl_v2_decompressor(PyObject *decompress, long long *bound);

#endif
