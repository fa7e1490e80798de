/* libdeflate's DEFLATE decoder and CRC-32 (vendor/libdeflate, v1.25, MIT licence), built into the format
 * layer's extension. It decodes about twice as fast as zlib; kafkalog's changes to it (vendor/README.md)
 * make it refuse every stream zlib refuses (Java's GZIPInputStream reads with zlib), so what it decodes is
 * what zlib decodes, byte for byte. See codec_libs.h. */
#pragma GCC diagnostic ignored "-Wsign-compare"     /* the vendored code, as its authors build it */
#include "vendor/libdeflate/lib/lib_common.h"
#include "vendor/libdeflate/lib/utils.c"
#include "vendor/libdeflate/lib/x86/cpu_features.c"
#include "vendor/libdeflate/lib/arm/cpu_features.c"
#include "vendor/libdeflate/lib/crc32.c"
#include "vendor/libdeflate/lib/deflate_decompress.c"

#include "codec_libs.h"

static struct libdeflate_decompressor *decompressor;   /* one per process; callers hold the GIL */

int kl_inflate(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *used, size_t *len) {
    if (!decompressor && !(decompressor = libdeflate_alloc_decompressor()))
        return 0;
    return libdeflate_deflate_decompress_ex(decompressor, in, n, out, cap, used, len) == LIBDEFLATE_SUCCESS;
}

uint32_t kl_crc32(uint32_t crc, const uint8_t *p, size_t n) { return libdeflate_crc32(crc, p, n); }
