/*
 * Internal to sampler/: the per-thread event sets (perf.c) and the sampler object that
 * target.c drives. Not for other modules.
 */
#ifndef HWSPY_SAMPLER_INTERNAL_H
#define HWSPY_SAMPLER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/ring.h"
#include "sampler/sampler.h"

struct thread {
	pid_t tid;
	int fds[SAMPLER_MAX_EVENTS];    /* -1 when closed; fds[0] is the group leader */
	uint64_t ids[SAMPLER_MAX_EVENTS];
	uint64_t last[SAMPLER_MAX_EVENTS]; /* running totals at the previous sample */
	void *map;
	size_t map_size;
	struct ring ring;
	bool traced;                    /* PTRACE_SEIZE'd by us */
	bool alive;
};

struct sampler {
	struct sampler_opts opts;
	struct event_spec events[SAMPLER_MAX_EVENTS];
	struct perf_event_attr attrs[SAMPLER_MAX_EVENTS];
	pid_t pid;
	bool launched;                  /* pid is our child */
	int signo;                      /* exact mode: the signal our events raise */
	int sigfd;                      /* signalfd for SIGCHLD (exact mode / launch) */
	struct thread *threads;
	size_t n_threads, cap_threads;
	unsigned char *scratch;         /* RING_SCRATCH_SIZE */
	struct sampler_stats stats;
	sampler_sample_fn fn;
	void *ctx;
	void (*resumed)(void *ctx);
	uint64_t last_scan_ns;
	bool stopped;                   /* sampler_stop() ran */
};

/* perf.c */
void perf_build_attrs(struct sampler *s);
int perf_thread_open(struct sampler *s, struct thread *t);
void perf_thread_disable(struct thread *t);
void perf_thread_close(struct thread *t);
/* Decodes every record waiting in t's ring; samples go to s->fn with stopped as given. */
void perf_thread_drain(struct sampler *s, struct thread *t, bool stopped);

uint64_t sampler_now_ns(void);

#endif
