/*
 * lib: libhwspy's implementation of include/hwspy.h over the stages (analysis/, record/,
 * sampler/, pyframes/, symbolizer/, output/, base/). One file per section of hwspy.h:
 * hwspy.c (common), and the others as their opening comments say.
 *
 * lib_fail() is how every public function fails: it saves the reason for hwspy_reason()
 * (thread-local) and returns r, so that `return lib_fail(r, "cannot attach to pid %d", pid);`
 * fails with the errno and the words together; a reason ends with ": strerror(-r)" where
 * lib_fail_errno() is used. lib_reason_clear() empties it (each public entry point that
 * can fail calls it first).
 */
#ifndef HWSPY_LIB_INTERNAL_H
#define HWSPY_LIB_INTERNAL_H

#include "include/hwspy.h"

int lib_fail(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int lib_fail_errno(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lib_reason_clear(void);

#endif
