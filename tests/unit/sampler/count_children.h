/*
 * count_children: what test_count.c and test_count_seam.c share (count_children.c).
 */
#ifndef HWSPY_TEST_COUNT_CHILDREN_H
#define HWSPY_TEST_COUNT_CHILDREN_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sampler/internal.h"

extern char self_exe[PATH_MAX];        /* this program */
extern char data_dir[PATH_MAX];        /* argv[1]: the folder of count_attrs.txt */

/* In main(), first: runs a child mode named by argv[1] and returns its exit status, else
 * fills self_exe and data_dir and returns -1 (run the tests). */
int count_children_main(int argc, char **argv);
uint64_t cpu_ns(clockid_t id);
/* The fds open in this process. */
int open_fds(void);
void parse(const char *const *names, size_t n, struct event_spec *ret);
/* Skips the test (saying why) where perf events are not allowed. */
void need_perf(void);
/* Forks this program as a burn child (burn PAGES MS NAPS: touches PAGES pages, burns MS ms of
 * CPU, naps NAPS times 1 ms), held stopped before its exec as the sampler's launch holds one
 * (SIGSTOP); the caller counts it with at_exec, then SIGCONTs it. */
pid_t fork_held(const char *pages, const char *ms, const char *naps);
double rel(double got, double want);

#endif
