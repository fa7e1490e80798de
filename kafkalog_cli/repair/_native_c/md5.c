/* MD5 (RFC 1321), for the cleaner's offset map: Kafka's SkimpyOffsetMap hashes every key with MD5 and
 * kafkalog's OffsetMap keys its entries by that digest (repair/cleaner.py). Written from the RFC; tested
 * against hashlib.md5 (tests/test_native_parity.py). Not used for anything security related. */
#include "md5.h"

#include <string.h>

/* the four rounds unrolled, as RFC 1321's reference code writes them */
#define F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define H(x, y, z) ((x) ^ (y) ^ (z))
#define I(x, y, z) ((y) ^ ((x) | ~(z)))
#define STEP(f, a, b, c, d, x, t, s)                                                                       \
    (a) += f((b), (c), (d)) + (x) + (t);                                                                   \
    (a) = ((a) << (s)) | ((a) >> (32 - (s)));                                                              \
    (a) += (b);

static void block(uint32_t st[4], const uint8_t *p) {
    uint32_t m[16];
    for (int i = 0; i < 16; i++)
        m[i] = (uint32_t)p[4 * i] | ((uint32_t)p[4 * i + 1] << 8) | ((uint32_t)p[4 * i + 2] << 16) |
               ((uint32_t)p[4 * i + 3] << 24);
    uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
    STEP(F, a, b, c, d, m[0], 0xd76aa478, 7)
    STEP(F, d, a, b, c, m[1], 0xe8c7b756, 12)
    STEP(F, c, d, a, b, m[2], 0x242070db, 17)
    STEP(F, b, c, d, a, m[3], 0xc1bdceee, 22)
    STEP(F, a, b, c, d, m[4], 0xf57c0faf, 7)
    STEP(F, d, a, b, c, m[5], 0x4787c62a, 12)
    STEP(F, c, d, a, b, m[6], 0xa8304613, 17)
    STEP(F, b, c, d, a, m[7], 0xfd469501, 22)
    STEP(F, a, b, c, d, m[8], 0x698098d8, 7)
    STEP(F, d, a, b, c, m[9], 0x8b44f7af, 12)
    STEP(F, c, d, a, b, m[10], 0xffff5bb1, 17)
    STEP(F, b, c, d, a, m[11], 0x895cd7be, 22)
    STEP(F, a, b, c, d, m[12], 0x6b901122, 7)
    STEP(F, d, a, b, c, m[13], 0xfd987193, 12)
    STEP(F, c, d, a, b, m[14], 0xa679438e, 17)
    STEP(F, b, c, d, a, m[15], 0x49b40821, 22)
    STEP(G, a, b, c, d, m[1], 0xf61e2562, 5)
    STEP(G, d, a, b, c, m[6], 0xc040b340, 9)
    STEP(G, c, d, a, b, m[11], 0x265e5a51, 14)
    STEP(G, b, c, d, a, m[0], 0xe9b6c7aa, 20)
    STEP(G, a, b, c, d, m[5], 0xd62f105d, 5)
    STEP(G, d, a, b, c, m[10], 0x02441453, 9)
    STEP(G, c, d, a, b, m[15], 0xd8a1e681, 14)
    STEP(G, b, c, d, a, m[4], 0xe7d3fbc8, 20)
    STEP(G, a, b, c, d, m[9], 0x21e1cde6, 5)
    STEP(G, d, a, b, c, m[14], 0xc33707d6, 9)
    STEP(G, c, d, a, b, m[3], 0xf4d50d87, 14)
    STEP(G, b, c, d, a, m[8], 0x455a14ed, 20)
    STEP(G, a, b, c, d, m[13], 0xa9e3e905, 5)
    STEP(G, d, a, b, c, m[2], 0xfcefa3f8, 9)
    STEP(G, c, d, a, b, m[7], 0x676f02d9, 14)
    STEP(G, b, c, d, a, m[12], 0x8d2a4c8a, 20)
    STEP(H, a, b, c, d, m[5], 0xfffa3942, 4)
    STEP(H, d, a, b, c, m[8], 0x8771f681, 11)
    STEP(H, c, d, a, b, m[11], 0x6d9d6122, 16)
    STEP(H, b, c, d, a, m[14], 0xfde5380c, 23)
    STEP(H, a, b, c, d, m[1], 0xa4beea44, 4)
    STEP(H, d, a, b, c, m[4], 0x4bdecfa9, 11)
    STEP(H, c, d, a, b, m[7], 0xf6bb4b60, 16)
    STEP(H, b, c, d, a, m[10], 0xbebfbc70, 23)
    STEP(H, a, b, c, d, m[13], 0x289b7ec6, 4)
    STEP(H, d, a, b, c, m[0], 0xeaa127fa, 11)
    STEP(H, c, d, a, b, m[3], 0xd4ef3085, 16)
    STEP(H, b, c, d, a, m[6], 0x04881d05, 23)
    STEP(H, a, b, c, d, m[9], 0xd9d4d039, 4)
    STEP(H, d, a, b, c, m[12], 0xe6db99e5, 11)
    STEP(H, c, d, a, b, m[15], 0x1fa27cf8, 16)
    STEP(H, b, c, d, a, m[2], 0xc4ac5665, 23)
    STEP(I, a, b, c, d, m[0], 0xf4292244, 6)
    STEP(I, d, a, b, c, m[7], 0x432aff97, 10)
    STEP(I, c, d, a, b, m[14], 0xab9423a7, 15)
    STEP(I, b, c, d, a, m[5], 0xfc93a039, 21)
    STEP(I, a, b, c, d, m[12], 0x655b59c3, 6)
    STEP(I, d, a, b, c, m[3], 0x8f0ccc92, 10)
    STEP(I, c, d, a, b, m[10], 0xffeff47d, 15)
    STEP(I, b, c, d, a, m[1], 0x85845dd1, 21)
    STEP(I, a, b, c, d, m[8], 0x6fa87e4f, 6)
    STEP(I, d, a, b, c, m[15], 0xfe2ce6e0, 10)
    STEP(I, c, d, a, b, m[6], 0xa3014314, 15)
    STEP(I, b, c, d, a, m[13], 0x4e0811a1, 21)
    STEP(I, a, b, c, d, m[4], 0xf7537e82, 6)
    STEP(I, d, a, b, c, m[11], 0xbd3af235, 10)
    STEP(I, c, d, a, b, m[2], 0x2ad7d2bb, 15)
    STEP(I, b, c, d, a, m[9], 0xeb86d391, 21)
    st[0] += a;
    st[1] += b;
    st[2] += c;
    st[3] += d;
}

void kl_md5(const uint8_t *p, size_t n, uint8_t out[16]) {
    uint32_t st[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    size_t full = n & ~(size_t)63;
    for (size_t i = 0; i < full; i += 64)
        block(st, p + i);
    uint8_t tail[128];
    size_t rest = n - full;
    memcpy(tail, p + full, rest);
    tail[rest] = 0x80;
    size_t tlen = rest + 1 + 8 <= 64 ? 64 : 128;
    memset(tail + rest + 1, 0, tlen - rest - 1);
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        tail[tlen - 8 + i] = (uint8_t)(bits >> (8 * i));
    block(st, tail);
    if (tlen == 128)
        block(st, tail + 64);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(st[i] >> (8 * j));
}

/* --- eight short keys at once (AVX2): the offset map hashes every key of a batch ------------------- */

static void pad_block(const uint8_t *p, size_t n, uint8_t blk[64]) {
    memset(blk, 0, 64);
    memcpy(blk, p, n);
    blk[n] = 0x80;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        blk[56 + i] = (uint8_t)(bits >> (8 * i));
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_MD5X8 1

#define VF(x, y, z) _mm256_xor_si256((z), _mm256_and_si256((x), _mm256_xor_si256((y), (z))))
#define VG(x, y, z) _mm256_xor_si256((y), _mm256_and_si256((z), _mm256_xor_si256((x), (y))))
#define VH(x, y, z) _mm256_xor_si256(_mm256_xor_si256((x), (y)), (z))
#define VI(x, y, z) _mm256_xor_si256((y), _mm256_or_si256((x), _mm256_xor_si256((z), ones)))
#define VSTEP(f, a, b, c, d, x, t, s)                                                                      \
    (a) = _mm256_add_epi32(_mm256_add_epi32((a), f((b), (c), (d))),                                       \
                           _mm256_add_epi32(m[x], _mm256_set1_epi32((int)(t))));                           \
    (a) = _mm256_or_si256(_mm256_slli_epi32((a), (s)), _mm256_srli_epi32((a), 32 - (s)));                 \
    (a) = _mm256_add_epi32((a), (b));

__attribute__((target("avx2"))) static void md5x8_blocks(const uint8_t blk[8][64], uint8_t out[8][16]) {
    __m256i m[16];
    const __m256i ones = _mm256_set1_epi32(-1);
    for (int w = 0; w < 16; w++) {
        uint32_t v[8];
        for (int l = 0; l < 8; l++)
            memcpy(&v[l], blk[l] + 4 * w, 4);        /* x86 is little-endian, as MD5's words */
        m[w] = _mm256_loadu_si256((const __m256i *)v);
    }
    __m256i a = _mm256_set1_epi32(0x67452301), b = _mm256_set1_epi32((int)0xefcdab89),
            c = _mm256_set1_epi32((int)0x98badcfe), d = _mm256_set1_epi32(0x10325476);
    __m256i a0 = a, b0 = b, c0 = c, d0 = d;
    VSTEP(VF, a, b, c, d, 0, 0xd76aa478, 7) VSTEP(VF, d, a, b, c, 1, 0xe8c7b756, 12)
    VSTEP(VF, c, d, a, b, 2, 0x242070db, 17) VSTEP(VF, b, c, d, a, 3, 0xc1bdceee, 22)
    VSTEP(VF, a, b, c, d, 4, 0xf57c0faf, 7) VSTEP(VF, d, a, b, c, 5, 0x4787c62a, 12)
    VSTEP(VF, c, d, a, b, 6, 0xa8304613, 17) VSTEP(VF, b, c, d, a, 7, 0xfd469501, 22)
    VSTEP(VF, a, b, c, d, 8, 0x698098d8, 7) VSTEP(VF, d, a, b, c, 9, 0x8b44f7af, 12)
    VSTEP(VF, c, d, a, b, 10, 0xffff5bb1, 17) VSTEP(VF, b, c, d, a, 11, 0x895cd7be, 22)
    VSTEP(VF, a, b, c, d, 12, 0x6b901122, 7) VSTEP(VF, d, a, b, c, 13, 0xfd987193, 12)
    VSTEP(VF, c, d, a, b, 14, 0xa679438e, 17) VSTEP(VF, b, c, d, a, 15, 0x49b40821, 22)
    VSTEP(VG, a, b, c, d, 1, 0xf61e2562, 5) VSTEP(VG, d, a, b, c, 6, 0xc040b340, 9)
    VSTEP(VG, c, d, a, b, 11, 0x265e5a51, 14) VSTEP(VG, b, c, d, a, 0, 0xe9b6c7aa, 20)
    VSTEP(VG, a, b, c, d, 5, 0xd62f105d, 5) VSTEP(VG, d, a, b, c, 10, 0x02441453, 9)
    VSTEP(VG, c, d, a, b, 15, 0xd8a1e681, 14) VSTEP(VG, b, c, d, a, 4, 0xe7d3fbc8, 20)
    VSTEP(VG, a, b, c, d, 9, 0x21e1cde6, 5) VSTEP(VG, d, a, b, c, 14, 0xc33707d6, 9)
    VSTEP(VG, c, d, a, b, 3, 0xf4d50d87, 14) VSTEP(VG, b, c, d, a, 8, 0x455a14ed, 20)
    VSTEP(VG, a, b, c, d, 13, 0xa9e3e905, 5) VSTEP(VG, d, a, b, c, 2, 0xfcefa3f8, 9)
    VSTEP(VG, c, d, a, b, 7, 0x676f02d9, 14) VSTEP(VG, b, c, d, a, 12, 0x8d2a4c8a, 20)
    VSTEP(VH, a, b, c, d, 5, 0xfffa3942, 4) VSTEP(VH, d, a, b, c, 8, 0x8771f681, 11)
    VSTEP(VH, c, d, a, b, 11, 0x6d9d6122, 16) VSTEP(VH, b, c, d, a, 14, 0xfde5380c, 23)
    VSTEP(VH, a, b, c, d, 1, 0xa4beea44, 4) VSTEP(VH, d, a, b, c, 4, 0x4bdecfa9, 11)
    VSTEP(VH, c, d, a, b, 7, 0xf6bb4b60, 16) VSTEP(VH, b, c, d, a, 10, 0xbebfbc70, 23)
    VSTEP(VH, a, b, c, d, 13, 0x289b7ec6, 4) VSTEP(VH, d, a, b, c, 0, 0xeaa127fa, 11)
    VSTEP(VH, c, d, a, b, 3, 0xd4ef3085, 16) VSTEP(VH, b, c, d, a, 6, 0x04881d05, 23)
    VSTEP(VH, a, b, c, d, 9, 0xd9d4d039, 4) VSTEP(VH, d, a, b, c, 12, 0xe6db99e5, 11)
    VSTEP(VH, c, d, a, b, 15, 0x1fa27cf8, 16) VSTEP(VH, b, c, d, a, 2, 0xc4ac5665, 23)
    VSTEP(VI, a, b, c, d, 0, 0xf4292244, 6) VSTEP(VI, d, a, b, c, 7, 0x432aff97, 10)
    VSTEP(VI, c, d, a, b, 14, 0xab9423a7, 15) VSTEP(VI, b, c, d, a, 5, 0xfc93a039, 21)
    VSTEP(VI, a, b, c, d, 12, 0x655b59c3, 6) VSTEP(VI, d, a, b, c, 3, 0x8f0ccc92, 10)
    VSTEP(VI, c, d, a, b, 10, 0xffeff47d, 15) VSTEP(VI, b, c, d, a, 1, 0x85845dd1, 21)
    VSTEP(VI, a, b, c, d, 8, 0x6fa87e4f, 6) VSTEP(VI, d, a, b, c, 15, 0xfe2ce6e0, 10)
    VSTEP(VI, c, d, a, b, 6, 0xa3014314, 15) VSTEP(VI, b, c, d, a, 13, 0x4e0811a1, 21)
    VSTEP(VI, a, b, c, d, 4, 0xf7537e82, 6) VSTEP(VI, d, a, b, c, 11, 0xbd3af235, 10)
    VSTEP(VI, c, d, a, b, 2, 0x2ad7d2bb, 15) VSTEP(VI, b, c, d, a, 9, 0xeb86d391, 21)
    a = _mm256_add_epi32(a, a0);
    b = _mm256_add_epi32(b, b0);
    c = _mm256_add_epi32(c, c0);
    d = _mm256_add_epi32(d, d0);
    uint32_t va[8], vb[8], vc[8], vd[8];
    _mm256_storeu_si256((__m256i *)va, a);
    _mm256_storeu_si256((__m256i *)vb, b);
    _mm256_storeu_si256((__m256i *)vc, c);
    _mm256_storeu_si256((__m256i *)vd, d);
    for (int l = 0; l < 8; l++) {
        memcpy(out[l], &va[l], 4);
        memcpy(out[l] + 4, &vb[l], 4);
        memcpy(out[l] + 8, &vc[l], 4);
        memcpy(out[l] + 12, &vd[l], 4);
    }
}
#endif

static int have_avx2 = -1;

/* digests of n keys (ptrs[i], lens[i]) into out (16 bytes each): keys of up to 55 bytes eight at a time */
void kl_md5_many(const uint8_t *const *ptrs, const size_t *lens, size_t n, uint8_t *out) {
#ifdef HAVE_MD5X8
    if (have_avx2 < 0) {
        __builtin_cpu_init();
        have_avx2 = __builtin_cpu_supports("avx2") && getenv("KAFKALOG_NATIVE_NO_AVX2") == NULL;
    }
    if (have_avx2) {
        uint8_t blk[8][64], dig[8][16];
        size_t idx[8];
        int k = 0;
        for (size_t i = 0; i < n; i++) {
            if (lens[i] > 55) {
                kl_md5(ptrs[i], lens[i], out + 16 * i);
                continue;
            }
            pad_block(ptrs[i], lens[i], blk[k]);
            idx[k++] = i;
            if (k == 8) {
                md5x8_blocks((const uint8_t(*)[64])blk, dig);
                for (int l = 0; l < 8; l++)
                    memcpy(out + 16 * idx[l], dig[l], 16);
                k = 0;
            }
        }
        for (int l = 0; l < k; l++)
            kl_md5(ptrs[idx[l]], lens[idx[l]], out + 16 * idx[l]);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        kl_md5(ptrs[i], lens[i], out + 16 * i);
}
