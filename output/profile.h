/*
 * profile: the one data model every output reads.
 *
 * A profile holds interned frames (kind, name, file, line, module), interned stacks (root ->
 * leaf, plus the thread they were seen on) and, per stack, a value vector: values[0] is the
 * number of samples, values[1 + i] the weight of event i (the sum of its periods for the
 * sampling event, the counted deltas for the events read with it). Metadata says what was
 * recorded. folded, SVG, speedscope, pprof, diff and the `top` table read only this header.
 *
 * Ownership: the profile owns every string and array it hands out; pointers stay valid until
 * profile_free() (frames and stacks are never moved once returned by id: ids are indexes).
 * Adding returns 0 or -ENOMEM / -EINVAL; a failed add leaves the profile unchanged.
 */
#ifndef HWSPY_OUTPUT_PROFILE_H
#define HWSPY_OUTPUT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROFILE_MAX_EVENTS 8

enum frame_kind {
	FRAME_PYTHON,
	FRAME_NATIVE,
	FRAME_KERNEL,
	FRAME_THREAD,           /* a root frame naming the thread (--threads) */
	FRAME_SPECIAL,          /* "[native]", "[unknown]", "[idle]" ... */
};

struct profile_frame {
	enum frame_kind kind;
	const char *name;       /* never NULL */
	const char *file;       /* NULL if unknown */
	int line;               /* 0 if unknown */
	const char *module;     /* shared object of a native frame, NULL if unknown */
};

struct profile_stack {
	uint32_t tid;           /* thread the samples came from (0 if unknown / merged) */
	uint32_t depth;
	const uint32_t *frames; /* frame ids, root first */
};

struct profile_event {
	const char *name;       /* "cpu-clock", "cache-misses:u" */
	uint64_t freq;          /* samples per second asked for (frequency mode), or 0 */
	uint64_t period;        /* fixed period, or 0 */
	bool sampling;          /* this event drove the sampling (events[0] when recorded) */
};

struct profile_meta {
	const char *target;     /* "pid 1234 (python3)", "python3 train.py" */
	const char *python;     /* "3.11.7", or NULL */
	uint64_t duration_ns;
	uint64_t lost;          /* samples the kernel lost */
	uint64_t dropped;       /* samples recorded without a usable stack */
	uint64_t threads;       /* threads seen */
	uint64_t start_time_ns; /* wall clock, ns since the epoch (0 if unknown) */
};

struct profile;

/* n_events event names (at least 1, at most PROFILE_MAX_EVENTS); copied. */
struct profile *profile_new(const char *const *event_names, size_t n_events);
void profile_free(struct profile *p);

size_t profile_n_events(const struct profile *p);
size_t profile_n_values(const struct profile *p);  /* n_events + 1 */
const struct profile_event *profile_event(const struct profile *p, size_t i);
int profile_set_event_rate(struct profile *p, size_t i, uint64_t freq, uint64_t period, bool sampling);

/* Metadata: strings are copied. */
int profile_set_target(struct profile *p, const char *target);
int profile_set_python(struct profile *p, const char *version);
struct profile_meta *profile_meta(struct profile *p);
const struct profile_meta *profile_meta_const(const struct profile *p);

/* Interns a frame (strings copied once): its id in *ret_id. */
int profile_frame_id(struct profile *p, const struct profile_frame *f, uint32_t *ret_id);
size_t profile_n_frames(const struct profile *p);
const struct profile_frame *profile_frame(const struct profile *p, uint32_t id);

/* Adds values (profile_n_values() of them: samples, then one per event) to the stack
 * (tid, frames[0..depth), root first), creating it if new. depth may be 0 only if no frame
 * is known: callers pass a FRAME_SPECIAL frame instead. */
int profile_add(struct profile *p, uint32_t tid, const uint32_t *frames, size_t depth,
		const uint64_t *values);
size_t profile_n_stacks(const struct profile *p);
const struct profile_stack *profile_stack(const struct profile *p, size_t i);
const uint64_t *profile_values(const struct profile *p, size_t i);
/* Sum of column col (0 = samples, 1 + i = event i) over all stacks. */
uint64_t profile_total(const struct profile *p, size_t col);

/* Looks up an event by name (exact, then without ":modifiers"): its index or -ENOENT. */
int profile_find_event(const struct profile *p, const char *name);

/* ---- folded.c -------------------------------------------------------------------------------- */

struct folded_opts {
	size_t column;          /* value column written as COUNT: 1 + event index (default 1) */
};

/* The text of one frame as folded writes it: Python `name (file:line)`, native `name [module]`,
 * kernel `name_[k]`, others their name; no ';' or newline inside, never ending in " <digits>".
 * Appended to out (a struct buf from base/buf.h). */
struct buf;
int folded_frame_text(const struct profile_frame *f, struct buf *out);
/* Writes `frame;...;leaf COUNT` lines, identical texts merged, stacks with COUNT 0 left out. */
int folded_write(const struct profile *p, const struct folded_opts *opts, FILE *out);

#endif
