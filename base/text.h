/*
 * text: text cut to a width, for a terminal's columns (hwspy top's rows and header lines).
 *
 * text_cut() appends s to out cut to at most room display columns, its end replaced with ".."
 * where it does not fit (UTF-8: a character per column; room < 0: no limit; room 1: "."; room
 * 0: nothing). 0, or -ENOMEM (out as it was, or with part of s: the caller resets it).
 */
#ifndef HWSPY_BASE_TEXT_H
#define HWSPY_BASE_TEXT_H

#include "base/buf.h"

int text_cut(struct buf *out, const char *s, int room);

#endif
