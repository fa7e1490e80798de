/* The decompressors kafkalog builds in (formats/_native_c/vendor: libdeflate, zstd's decoder, LZ4; their
 * versions, licences and kafkalog's local changes in vendor/README.md), each compiled in a translation unit
 * of its own (lib_deflate.c, lib_zstd.c, lib_lz4.c) and reached through these few functions only. No Python
 * here: the callers (codecs.c) hold the GIL and keep one state per call.
 *
 * Every function decodes into a buffer the caller gives (``cap`` bytes) and reports anything unusual as a
 * failure: the caller then decompresses with the pure path's libraries, which report it exactly. */
#ifndef KAFKALOG_CODEC_LIBS_H
#define KAFKALOG_CODEC_LIBS_H

#include <stddef.h>
#include <stdint.h>

/* raw DEFLATE (RFC 1951) at ``in``: 1 decoded (``*used`` input bytes, ``*len`` output bytes), 0 otherwise
 * (invalid, incomplete, more than ``cap`` bytes of output, or a stream zlib would refuse) */
int kl_inflate(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *used, size_t *len);
uint32_t kl_crc32(uint32_t crc, const uint8_t *p, size_t n);          /* CRC-32 (gzip's), crc: 0 to start */

/* one zstd frame (or skippable frame) at ``in``: its size in bytes (0: not a whole frame), and in
 * ``*window`` the window size it needs (0 for a skippable frame) */
size_t kl_zstd_frame_size(const uint8_t *in, size_t n, unsigned long long *window);
/* an upper bound of what the frames at ``in`` decompress to, or -1 (not frames, or too large) */
long long kl_zstd_bound(const uint8_t *in, size_t n);
/* one frame into out: 1 decoded (``*len``), 0 otherwise */
int kl_zstd_frame(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *len);

/* one LZ4 block: the bytes decoded (at most cap), or -1 */
int kl_lz4_block(const uint8_t *in, int n, uint8_t *out, int cap);

#endif
