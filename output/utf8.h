/*
 * utf8: the UTF-8 scanner the writers share (private to output/; not part of output.h).
 */
#ifndef HWSPY_OUTPUT_UTF8_H
#define HWSPY_OUTPUT_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (n > 0 bytes left), or 0 if it is not one; then
 * *ret_skip is the length of its longest valid prefix (at least 1), to be replaced by one U+FFFD
 * as Unicode recommends and browsers and Python do. */
size_t utf8_len(const unsigned char *s, size_t n, size_t *ret_skip);

#endif
