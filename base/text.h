/*
 * text: text cut to a width, for a terminal's columns (hwspy top's rows and header lines), and
 * numbers written for a message.
 *
 * text_cut() appends s to out cut to at most room display columns, its end replaced with ".."
 * where it does not fit (UTF-8: a character per column; room < 0: no limit; room 1: "."; room
 * 0: nothing). 0, or -ENOMEM (out as it was, or with part of s: the caller resets it).
 */
#ifndef HWSPY_BASE_TEXT_H
#define HWSPY_BASE_TEXT_H

#include <stdint.h>

#include "base/buf.h"

int text_cut(struct buf *out, const char *s, int room);

/* v with thousands separators ("1,234,567") into buf (27 bytes hold any): buf. */
char *text_grouped(char *buf, size_t size, uint64_t v);
/* A size in bytes, in powers of 1000 as ls -h --si: "812 bytes", "45.1 kB", "4.0 MB", "1.2 GB"
 * into buf: buf. */
char *text_size(char *buf, size_t size, uint64_t v);

#endif
