/*
 * Internal to sampler/: the per-thread event sets (perf.c) and the sampler object that
 * target.c drives. Not for other modules.
 */
#ifndef HWSPY_SAMPLER_INTERNAL_H
#define HWSPY_SAMPLER_INTERNAL_H

#include <pthread.h>
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
	/* capture: the BPF_OUTPUT event feeding this ring, its slot in the program's maps */
	int out_fd;
	uint64_t out_id;
	int slot;
	bool prog;                      /* the capture program is on fds[0] */
};

/* capture.c: the program, its maps, and the capture record waiting for its sample. */
struct capture {
	int prog_fd, roots_fd, scratch_fd, out_fd;
	struct sampler_capture_spec spec;
	unsigned char *slots;           /* bitmap of the out map's slots in use */
	unsigned char *held;            /* RING_SCRATCH_SIZE: the last capture record's data */
	size_t held_len, held_len_used;
	pid_t held_tid;
	struct sample_capture out;
};

/* tracer.c: the thread that does every ptrace call of exact mode, one job at a time */
enum { TRACER_IDLE, TRACER_POSTED, TRACER_DONE };
struct tracer {
	pthread_t thread;
	pid_t tid;                      /* its thread id (what /proc's TracerPid shows) */
	bool init, running, quit;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state;
	int (*job)(struct sampler *s, void *arg);
	void *arg;
	int ret;
};

struct sampler {
	struct sampler_opts opts;
	struct event_spec events[SAMPLER_MAX_EVENTS];
	struct perf_event_attr attrs[SAMPLER_MAX_EVENTS];
	pid_t pid;
	bool launched;                  /* pid is our child */
	int signo;                      /* exact mode: the signal our events raise */
	int old_signo;                  /* the one before, if the target began to catch it */
	struct tracer tracer;           /* exact mode */
	bool paused;                    /* sampler_pause(): nothing traced, events disabled */
	int sigfd;                      /* signalfd for SIGCHLD (exact mode / launch) */
	struct thread *threads;
	size_t n_threads, cap_threads;
	unsigned char *scratch;         /* RING_SCRATCH_SIZE */
	struct sampler_stats stats;
	sampler_sample_fn fn;
	void *ctx;
	void (*resumed)(void *ctx);
	uint64_t last_scan_ns;
	struct capture capture;
	int capture_error;              /* of the capture started by sampler_new() */
	int (*capture_root_fn)(void *ctx, pid_t tid, uint64_t *ret_root);
	void *capture_root_ctx;
	bool stopped;                   /* sampler_stop() ran */
	bool brk;                       /* sampler_break() asked sampler_run() to return */
};

/* target.c */
struct thread *thread_find(struct sampler *s, pid_t tid);
/* Adds tid and opens its events. The thread must already be traced in exact mode. */
int thread_add(struct sampler *s, pid_t tid, bool traced);
void thread_gone(struct sampler *s, struct thread *t);
/* Finds threads not yet known and adds them (seizing them first in exact mode): how many,
 * or -errno (fail_hard: the first failure; else failures are counted). */
int scan_threads(struct sampler *s, bool fail_hard);
bool proc_alive(pid_t pid);
void target_ended(struct sampler *s, int status);
void drain_all(struct sampler *s);

/* tracer.c */
int tracer_start(struct sampler *s);
/* Runs job(s, arg) on the tracer thread and waits for it (directly, if none runs). */
int tracer_call(struct sampler *s, int (*job)(struct sampler *s, void *arg), void *arg);
/* Ends the tracer thread: the kernel detaches what it still traces. */
void tracer_end(struct sampler *s);
void tracer_release_resources(struct sampler *s);
/* Jobs: sampler_run()'s loop (arg: struct tracer_run_args), the release of every traced
 * thread (events left open, disabled), the re-attach after a pause. */
struct tracer_run_args {
	volatile sig_atomic_t *stop;
	uint64_t duration_ns;
};
int tracer_run(struct sampler *s, void *arg);
int tracer_release(struct sampler *s, void *arg);
int tracer_reattach(struct sampler *s, void *arg);
/* A signal that cannot hurt the target if it is delivered after all (not avoid), or 0. */
int pick_signal(pid_t pid, int avoid);
/* Who traces the live thread tid of pid (0: nobody): 0, or -ESRCH (gone or exiting). */
int tracer_task_owner(pid_t pid, pid_t tid, pid_t *ret_tracer);

/* perf.c */
void perf_build_attrs(struct sampler *s);
int perf_thread_open(struct sampler *s, struct thread *t);
void perf_thread_disable(struct thread *t);
void perf_thread_close(struct sampler *s, struct thread *t);
/* Decodes every record waiting in t's ring; samples go to s->fn with stopped as given. */
void perf_thread_drain(struct sampler *s, struct thread *t, bool stopped);

uint64_t sampler_now_ns(void);

/* capture.c */
int capture_load(struct capture *c, const struct sampler_capture_spec *spec);
void capture_close(struct capture *c);
size_t capture_stride(const struct sampler_capture_spec *spec);
/* Opens t's BPF_OUTPUT event into its ring and puts the program on it (no-op before the
 * program is loaded). */
int capture_thread_open(struct sampler *s, struct thread *t);
void capture_thread_close(struct sampler *s, struct thread *t);
/* Keeps the capture record h (from t's ring) for the sample that follows it. */
void capture_hold(struct sampler *s, struct thread *t, const struct perf_event_header *h);
const struct sample_capture *capture_match(struct sampler *s, const struct thread *t,
					   const struct sample *smp);

#endif
