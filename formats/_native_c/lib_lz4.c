/* LZ4's block decoder (vendor/lz4, v1.10.0, BSD licence) built into the format layer's extension, symbols
 * hidden. See codec_libs.h. */
#define LZ4LIB_VISIBILITY __attribute__((visibility("hidden")))
#include "vendor/lz4/lz4.c"

#include "codec_libs.h"

int kl_lz4_block(const uint8_t *in, int n, uint8_t *out, int cap) {
    int r = LZ4_decompress_safe((const char *)in, (char *)out, n, cap);
    return r < 0 ? -1 : r;
}
