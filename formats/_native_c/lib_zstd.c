/* zstd's decoder (vendor/zstd, v1.5.6, BSD licence) built into the format layer's extension, with the
 * settings of zstd's own single-file decoder (build/single_file_libs/zstddeclib-in.c): no legacy formats,
 * no assembly, no tracing, symbols hidden. See codec_libs.h. */
#define ZSTDLIB_VISIBLE __attribute__((visibility("hidden")))
#define ZSTDERRORLIB_VISIBLE __attribute__((visibility("hidden")))
#define DEBUGLEVEL 0
#define MEM_MODULE
#undef XXH_NAMESPACE
#define XXH_NAMESPACE ZSTD_
#undef XXH_PRIVATE_API
#define XXH_PRIVATE_API
#undef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#define ZSTD_LEGACY_SUPPORT 0
#define ZSTD_STRIP_ERROR_STRINGS
#define ZSTD_TRACE 0
#define ZSTD_DISABLE_ASM 1
#define ZSTD_DEPS_NEED_MALLOC
#include "vendor/zstd/lib/common/zstd_deps.h"
#include "vendor/zstd/lib/common/debug.c"
#include "vendor/zstd/lib/common/entropy_common.c"
#include "vendor/zstd/lib/common/error_private.c"
#include "vendor/zstd/lib/common/fse_decompress.c"
#include "vendor/zstd/lib/common/zstd_common.c"
#include "vendor/zstd/lib/decompress/huf_decompress.c"
#include "vendor/zstd/lib/decompress/zstd_ddict.c"
#include "vendor/zstd/lib/decompress/zstd_decompress.c"
#include "vendor/zstd/lib/decompress/zstd_decompress_block.c"

#include "codec_libs.h"

static ZSTD_DCtx *dctx;                                 /* one per process; callers hold the GIL */

size_t kl_zstd_frame_size(const uint8_t *in, size_t n, unsigned long long *window) {
    ZSTD_frameHeader h;
    if (ZSTD_getFrameHeader(&h, in, n) != 0)            /* > 0: the header is incomplete */
        return 0;
    size_t size = ZSTD_findFrameCompressedSize(in, n);
    if (ZSTD_isError(size) || size > n)
        return 0;
    *window = h.frameType == ZSTD_skippableFrame ? 0 : h.windowSize;
    return size;
}

long long kl_zstd_bound(const uint8_t *in, size_t n) {
    unsigned long long b = ZSTD_decompressBound(in, n);
    return b == ZSTD_CONTENTSIZE_ERROR || b > (1ULL << 62) ? -1 : (long long)b;
}

int kl_zstd_frame(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *len) {
    if (!dctx && !(dctx = ZSTD_createDCtx()))
        return 0;
    size_t r = ZSTD_decompressDCtx(dctx, out, cap, in, n);
    if (ZSTD_isError(r))
        return 0;
    *len = r;
    return 1;
}
