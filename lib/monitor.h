/*
 * monitor.h: what lib/monitor*.c share (hwspy monitor, include/hwspy.h's monitor section).
 * monitor.c: the options, the loop (scan, ticks, listener, rotation, the end); watch.c: one
 * watched process (its counters, its recorder on a thread of its own, the interval's profile,
 * its waits, the rotation); monitor_metrics.c: the series of every watch, for /metrics.
 */
#ifndef HWSPY_LIB_MONITOR_H
#define HWSPY_LIB_MONITOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "include/hwspy.h"

struct profile;
struct waitsample;
struct profdir;
struct discover;
struct discovered;

#define MONITOR_MAX_LABELS 16
#define MONITOR_MAX_WATCHES 256
#define MONITOR_MAX_TOP 32
/* a recorder whose frame table passed this many frames is replaced at the rotation */
#define MONITOR_MAX_FRAMES 200000
#define MONITOR_RING_PAGES 16            /* 64 KiB per ring */

/* A function among the hottest of an interval, for one sampled event. */
struct mon_top {
	size_t event;
	char function[192];
	char file[256];
	double share;                   /* of the event's weight in the interval */
};

/* What an interval's counts say (NaN: not counted). */
struct mon_ratios {
	double ipc, cpus;
	size_t n_miss;
	struct {
		char event[96];
		double mpki, miss_ratio;
	} miss[HWSPY_COUNT_MAX_EVENTS];
};

enum watch_state {
	WATCH_STARTING,                 /* its recorder's thread attaches */
	WATCH_SAMPLING,
	WATCH_NOT_SAMPLED,              /* counted alone (sample_error) */
	WATCH_ENDED,                    /* its recorder returned (the target ended, or failed) */
};

struct watch {
	struct hwspy_monitor *m;
	pid_t pid;
	uint64_t start_time;            /* /proc/PID/stat's: with pid, the process's identity */
	char process[64];
	bool seen;
	bool unreadable;                /* neither counted nor sampled */
	int error;                      /* why (unreadable, or not sampled) */
	char why[256];
	bool said;                      /* the note on its sampling said */
	/* counting */
	struct hwspy_count *count;
	struct hwspy_count_mark *mark_from, *mark_to, *sum;
	/* sampling: the recorder runs on thread */
	struct hwspy_recorder *rec;
	pthread_t thread;
	bool thread_on;
	volatile sig_atomic_t stop;
	_Atomic int state;              /* enum watch_state */
	int sample_error;
	char sample_why[256];
	uint64_t started_ns;            /* the recorder's start */
	uint64_t born_ns;               /* when it was picked up */
	_Atomic uint64_t gil_addr;      /* the target's GIL state, as the recorder found it */
	pthread_mutex_t lock;           /* what follows, shared with the recorder's thread */
	struct profile *interval;       /* this interval's samples (frames of its own) */
	uint32_t *map;                  /* the recorder's frame id -> interval's id + 1 */
	size_t n_map;
	uint64_t samples;               /* all recorders' samples so far */
	uint64_t lost, lost_base;       /* the kernel's lost samples: this recorder's, the earlier */
	uint64_t stats_at_ns;
	/* the interval */
	uint64_t interval_wall_ns, interval_mono_ns;
	/* waits, sampled at each tick */
	struct waitsample *waits;
	/* the last interval's findings, ratios, hottest functions */
	bool have_interval;
	struct mon_ratios ratios;
	struct hwspy_findings findings;
	struct mon_top top[MONITOR_MAX_TOP];
	size_t n_top;
	char python[32];
	char mode[16];
	uint64_t profiles_written;
};

struct hwspy_monitor {
	struct hwspy_monitor_opts o;        /* defaults filled in */
	struct hwspy_events *sample_events;
	const char *service;            /* the label service's value, if given */
	char *labels[2 * MONITOR_MAX_LABELS + 1];   /* key, value, ..., NULL */
	size_t n_labels;
	struct discover *discover;
	struct discovered *found;       /* a scan's, MONITOR_MAX_WATCHES */
	int listen_fd;
	int port;
	bool loopback;                  /* the listener's address is the loopback's */
	struct profdir *dir;
	char *dir_path;
	struct watch *w[MONITOR_MAX_WATCHES];
	size_t n;
	char hostname[256];
	uint64_t started_ns;
	uint64_t scrapes, scrape_errors, profiles_written, profiles_failed, watch_failed;
	uint64_t last_scan_ns, last_tick_ns, trimmed_ns;
};

uint64_t mon_now_ns(void);              /* CLOCK_MONOTONIC */
/* now - then, 0 where then is later (a time taken after now, by another step of the loop) */
static inline uint64_t mon_since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}
uint64_t mon_wall_ns(void);             /* CLOCK_REALTIME */
void mon_note(struct hwspy_monitor *m, enum hwspy_monitor_note note, pid_t pid, int err,
	      const char *detail);

/* watch.c */
int watch_new(struct hwspy_monitor *m, pid_t pid, uint64_t start_time, const char *comm,
	      struct watch **ret);
/* The target's end (gone: it exited) or the monitor's: the recorder stopped, its last
 * interval written. */
void watch_free(struct watch *w, bool write);
void watch_tick(struct watch *w, uint64_t now_ns, uint64_t dt_ns);
/* Ends the interval where it is due (force: now): its profile written, its ratios, findings and
 * top functions kept. */
void watch_rotate(struct watch *w, uint64_t now_ns, bool force);

/* monitor_metrics.c */
int mon_write_metrics(struct hwspy_monitor *m, bool openmetrics, FILE *out);

#endif
