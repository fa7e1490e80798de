/* MD5 (md5.c), for the offset map of kafkalog_cli.repair._native_clean. */
#ifndef KAFKALOG_MD5_H
#define KAFKALOG_MD5_H

#include <stddef.h>
#include <stdint.h>

void kl_md5(const uint8_t *p, size_t n, uint8_t out[16]);
void kl_md5_many(const uint8_t *const *ptrs, const size_t *lens, size_t n, uint8_t *out);

#endif
