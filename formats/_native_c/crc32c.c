/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as Kafka's org.apache.kafka.common.utils.Crc32C.
 *
 * x86-64 with SSE4.2 (checked at run time with cpuid): the crc32 instruction, 8 bytes at a time, three
 * independent streams over long buffers combined with a precomputed "append N zero bytes" operator.
 * Elsewhere: slicing-by-8 tables. Both give the crc32c package's value (tests/test_native_parity.py);
 * check value crc32c("123456789") = 0xE3069283.
 */
#include "native.h"

#define POLY 0x82F63B78u

static uint32_t table8[8][256];
static int have_hw;

/* --- slicing-by-8 fallback ---------------------------------------------------------------------- */
static uint32_t crc_sw(uint32_t c, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c = table8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        w ^= c;
        c = table8[7][w & 0xff] ^ table8[6][(w >> 8) & 0xff] ^ table8[5][(w >> 16) & 0xff] ^
            table8[4][(w >> 24) & 0xff] ^ table8[3][(w >> 32) & 0xff] ^ table8[2][(w >> 40) & 0xff] ^
            table8[1][(w >> 48) & 0xff] ^ table8[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = table8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

/* --- "append n zero bytes" operators for combining interleaved streams --------------------------- */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256
static uint32_t zeros_long[4][256], zeros_short[4][256];

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1)
            sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; n++)
        square[n] = gf2_times(mat, mat[n]);
}

/* operator for appending len zero bytes (len a power of two), as 4 byte-indexed tables */
static void zeros_op(uint32_t tables[4][256], size_t len) {
    uint32_t even[32], odd[32];
    odd[0] = POLY;                       /* operator for one zero bit */
    uint32_t row = 1;
    for (int n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    gf2_square(even, odd);               /* two zero bits */
    gf2_square(odd, even);               /* four zero bits */
    /* odd: 4 bits; square twice more per doubling: 8 bits = 1 byte first */
    gf2_square(even, odd);               /* one zero byte */
    uint32_t *op = even, *other = odd;
    for (size_t l = 1; l < len; l <<= 1) {
        gf2_square(other, op);
        uint32_t *t = op;
        op = other;
        other = t;
    }
    for (int n = 0; n < 256; n++) {
        tables[0][n] = gf2_times(op, (uint32_t)n);
        tables[1][n] = gf2_times(op, (uint32_t)n << 8);
        tables[2][n] = gf2_times(op, (uint32_t)n << 16);
        tables[3][n] = gf2_times(op, (uint32_t)n << 24);
    }
}

static inline uint32_t shift(uint32_t tables[4][256], uint32_t c) {
    return tables[0][c & 0xff] ^ tables[1][(c >> 8) & 0xff] ^ tables[2][(c >> 16) & 0xff] ^ tables[3][c >> 24];
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <nmmintrin.h>
#define HAVE_X86_CRC 1

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c0 = crc;
    while (n && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    while (n >= 3 * LONG_BLOCK) {        /* three streams hide the instruction's 3-cycle latency */
        uint64_t c1 = 0, c2 = 0;
        const uint8_t *end = p + LONG_BLOCK;
        do {
            uint64_t a, b, d;
            memcpy(&a, p, 8);
            memcpy(&b, p + LONG_BLOCK, 8);
            memcpy(&d, p + 2 * LONG_BLOCK, 8);
            c0 = _mm_crc32_u64(c0, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, d);
            p += 8;
        } while (p < end);
        c0 = shift(zeros_long, (uint32_t)c0) ^ c1;
        c0 = shift(zeros_long, (uint32_t)c0) ^ c2;
        p += 2 * LONG_BLOCK;
        n -= 3 * LONG_BLOCK;
    }
    while (n >= 3 * SHORT_BLOCK) {
        uint64_t c1 = 0, c2 = 0;
        const uint8_t *end = p + SHORT_BLOCK;
        do {
            uint64_t a, b, d;
            memcpy(&a, p, 8);
            memcpy(&b, p + SHORT_BLOCK, 8);
            memcpy(&d, p + 2 * SHORT_BLOCK, 8);
            c0 = _mm_crc32_u64(c0, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, d);
            p += 8;
        } while (p < end);
        c0 = shift(zeros_short, (uint32_t)c0) ^ c1;
        c0 = shift(zeros_short, (uint32_t)c0) ^ c2;
        p += 2 * SHORT_BLOCK;
        n -= 3 * SHORT_BLOCK;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c0 = _mm_crc32_u64(c0, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#endif

void kl_crc32c_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table8[0][n] = c;
    }
    for (int n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            table8[k][n] = table8[0][table8[k - 1][n] & 0xff] ^ (table8[k - 1][n] >> 8);
    zeros_op(zeros_long, LONG_BLOCK);
    zeros_op(zeros_short, SHORT_BLOCK);
#ifdef HAVE_X86_CRC
    __builtin_cpu_init();
    have_hw = __builtin_cpu_supports("sse4.2") && getenv("KAFKALOG_NATIVE_NO_SSE42") == NULL;
#endif
}

uint32_t kl_crc32c(uint32_t crc, const uint8_t *p, size_t n) {
    uint32_t c = ~crc;
#ifdef HAVE_X86_CRC
    if (have_hw)
        return ~crc_hw(c, p, n);
#endif
    return ~crc_sw(c, p, n);
}

const char *kl_crc32c_impl(void) { return have_hw ? "sse4.2" : "table"; }
