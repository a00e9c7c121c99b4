/*
 * profile: the data model every output reads and every reader builds (output/output.h: the
 * folded, SVG, speedscope and pprof writers, the folded and pprof readers, diff), and what the
 * recorder fills. It holds no writer and does no I/O.
 *
 * A profile holds interned frames (kind, name, file, line, module), interned stacks (root ->
 * leaf, plus the thread they were seen on) and, per stack, a value vector of
 * profile_n_values() columns: column 0 is the number of samples, column 1 + i the weight of
 * event i (the sum of its periods for the sampling event, the counted deltas for the events
 * read with it). Identical frames get one id, identical (tid, frames) one stack whose values
 * add up. Around that: the events (name, rate, whether it drove the sampling), metadata saying
 * what was recorded, thread names, the build-ids of native modules and, when asked for, a log
 * of the samples in the order they were taken.
 *
 * Ids and indexes: frame ids and stack indexes count up from 0 in the order frames and stacks
 * were first added (profile_n_frames(), profile_n_stacks()) and never change.
 *
 * Ownership: the profile owns every string and array it hands out. Strings (names, files,
 * modules, metadata, thread names, build-ids) and a stack's frames array stay valid until
 * profile_free(). The structs and vectors that profile_frame(), profile_stack(),
 * profile_values() and profile_log_values() point to live in arrays that grow: their pointers
 * hold until the next profile_frame_id(), profile_add() or profile_add_at(); ask again by id
 * after adding. Every string passed in is copied.
 *
 * Errors: functions that change the profile return 0 or a negative errno, -ENOMEM or -EINVAL
 * (a NULL name, an id or index out of range) as each says; a failed add leaves what the
 * profile shows unchanged. Lookups out of range return NULL (or 0, SIZE_MAX as each says).
 * Not thread-safe: one thread builds a profile; once built, readers may share it.
 */
#ifndef HWSPY_OUTPUT_PROFILE_H
#define HWSPY_OUTPUT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROFILE_MAX_EVENTS 8

enum frame_kind {
	FRAME_PYTHON,
	FRAME_NATIVE,
	FRAME_KERNEL,
	FRAME_THREAD,           /* a root frame naming the thread (--threads) or the process
	                         * (--subprocesses) */
	FRAME_SPECIAL,          /* "[native]", "[unknown]", "[idle]" ... */
	FRAME_WAIT,             /* why a thread was off the CPU (--off-cpu, --wall): "[wait: GIL]",
	                         * "[wait: read fd 5 (pipe)]", "[preempted]" */
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
	uint32_t depth;         /* at least 1 */
	const uint32_t *frames; /* frame ids, root first */
};

struct profile_event {
	const char *name;       /* "cpu-clock", "cache-misses:u" */
	uint64_t freq;          /* samples per second asked for (frequency mode), or 0 */
	uint64_t period;        /* fixed period, or 0 */
	bool sampling;          /* this event drove the sampling (events[0] when recorded) */
};

/* What was recorded. The strings are set through profile_set_target(), profile_set_python()
 * and profile_set_threads_missed() (which copy them); the numbers are written in place through
 * profile_meta(). All are NULL or 0 until set. */
struct profile_meta {
	const char *target;     /* "pid 1234 (python3)", "python3 train.py" */
	const char *python;     /* "3.11.7", or NULL */
	uint64_t duration_ns;
	uint64_t lost;          /* samples the kernel lost */
	uint64_t dropped;       /* samples recorded without a usable stack */
	uint64_t threads;       /* threads seen */
	uint64_t threads_missed;/* threads left out (not profiled at all) */
	const char *threads_missed_why; /* why, for a person ("12 out of file descriptors
	                         * (ulimit -n 256)"), or NULL */
	uint64_t start_time_ns; /* wall clock, ns since the epoch (0 if unknown) */
};

struct profile;

/* A new, empty profile of n_events events (at least 1, at most PROFILE_MAX_EVENTS) named
 * event_names[0..n_events) (copied): event 0 samples, the others are counted, no rate. NULL
 * when n_events is out of range or memory runs out. */
struct profile *profile_new(const char *const *event_names, size_t n_events);
/* Frees p and everything it handed out; NULL is a no-op. */
void profile_free(struct profile *p);

size_t profile_n_events(const struct profile *p);
size_t profile_n_values(const struct profile *p);  /* n_events + 1 */
/* Event i < profile_n_events(), else NULL. */
const struct profile_event *profile_event(const struct profile *p, size_t i);
/* Event i's rate and sampling flag (struct profile_event): 0, or -EINVAL (no such event). */
int profile_set_event_rate(struct profile *p, size_t i, uint64_t freq, uint64_t period, bool sampling);
/* Names event i (the name copied): for a reader that learns the event after profile_new(), such
 * as a folded file's header. 0, -EINVAL (no such event, or the profile holds stacks), -ENOMEM. */
int profile_set_event_name(struct profile *p, size_t i, const char *name);
/* Looks up an event by name: exactly, else by the part before ':' on both sides ("cycles"
 * finds "cycles:u", "cycles:k" finds "cycles"). Its index, or -ENOENT. */
int profile_find_event(const struct profile *p, const char *name);

/* Metadata strings, copied (NULL unsets them): 0 or -ENOMEM. */
int profile_set_target(struct profile *p, const char *target);
int profile_set_python(struct profile *p, const char *version);
int profile_set_threads_missed(struct profile *p, uint64_t n, const char *why);
struct profile_meta *profile_meta(struct profile *p);
const struct profile_meta *profile_meta_const(const struct profile *p);

/* Interns a frame (strings copied once): its id in *ret_id, the same id for an equal frame.
 * 0, -EINVAL (f->name NULL), -ENOMEM. */
int profile_frame_id(struct profile *p, const struct profile_frame *f, uint32_t *ret_id);
/* The kind of a frame written as "[...]" (name[0..n), n >= 2, in brackets): FRAME_THREAD
 * ("[thread ...", "[process ..."), FRAME_WAIT ("[wait: ...]", "[preempted]"), FRAME_SPECIAL (one word:
 * "[native]"), else FRAME_NATIVE (a frame whose name happens to be bracketed). */
enum frame_kind profile_bracket_kind(const char *name, size_t n);
/* What an event's weights measure, by its name (a ":modifiers" suffix ignored): the one table
 * of units, which every output that names a unit reads. */
enum profile_unit {
	PROFILE_UNIT_COUNT,     /* events counted: hardware events, faults, switches, "samples" */
	PROFILE_UNIT_CPU_NS,    /* nanoseconds on a CPU: cpu-clock, task-clock */
	PROFILE_UNIT_OFF_CPU_NS,/* nanoseconds off the CPU: off-cpu */
	PROFILE_UNIT_WALL_NS,   /* nanoseconds of wall time, on the CPU and off it: wall */
};
enum profile_unit profile_event_unit(const char *event);
/* What follows a time in u, for a person: "of CPU", "off the CPU", "of wall time" ("2.1 s of
 * CPU", "ms of wall time"); "" for PROFILE_UNIT_COUNT. */
const char *profile_unit_words(enum profile_unit u);
/* Whether the event's samples weigh nanoseconds (profile_event_unit() is not COUNT). */
bool profile_event_is_time(const char *event);
size_t profile_n_frames(const struct profile *p);
/* Frame id < profile_n_frames(), else NULL. */
const struct profile_frame *profile_frame(const struct profile *p, uint32_t id);

/* Adds values (profile_n_values() of them: samples, then one per event) to the stack
 * (tid, frames[0..depth), root first), creating it if new. depth is at least 1: a sample with
 * no known frame gets a FRAME_SPECIAL frame such as "[unknown]". 0, -EINVAL (depth 0, or a
 * frame id not interned), -ENOMEM. Sums are not checked for overflow. */
int profile_add(struct profile *p, uint32_t tid, const uint32_t *frames, size_t depth,
		const uint64_t *values);
size_t profile_n_stacks(const struct profile *p);
/* Stack i < profile_n_stacks() and its value vector, else NULL. */
const struct profile_stack *profile_stack(const struct profile *p, size_t i);
const uint64_t *profile_values(const struct profile *p, size_t i);
/* Sum of column col (0 = samples, 1 + i = event i) over all stacks; 0 when col is out of
 * range. */
uint64_t profile_total(const struct profile *p, size_t col);

/*
 * The time order of samples (speedscope's time-ordered views), off until profile_log_start().
 * Then each profile_add_at() also appends an entry to a log: its stack's index, its time and
 * its event values (values[1..], profile_n_events() of them; 12 + 8 x events bytes). An add that
 * would take the log past max_bytes, or finds no memory for it, and every add after it, is left
 * out of the log (not of the stacks) and profile_log_complete() turns false: writers then use
 * the merged stacks alone. Entries keep the order they were added in; their times need not
 * ascend. profile_log_start() returns 0.
 */
int profile_log_start(struct profile *p, size_t max_bytes);
/* profile_add(), then the log entry (when the log is on and complete). */
int profile_add_at(struct profile *p, uint32_t tid, const uint32_t *frames, size_t depth,
		   const uint64_t *values, uint64_t time_ns);
/* Entries in the log: 0 when it is off or incomplete. */
size_t profile_log_len(const struct profile *p);
bool profile_log_complete(const struct profile *p);
/* Entry i < profile_log_len(): its stack (an index for profile_stack()), time, event values
 * (past the entries: SIZE_MAX, 0, NULL). */
size_t profile_log_stack(const struct profile *p, size_t i);
uint64_t profile_log_time(const struct profile *p, size_t i);
const uint64_t *profile_log_values(const struct profile *p, size_t i);

/* Thread names: tid's name (copied; set again to replace it): 0, -EINVAL (name NULL),
 * -ENOMEM. profile_thread_name(): the name, or NULL when none was set. */
int profile_set_thread_name(struct profile *p, uint32_t tid, const char *name);
const char *profile_thread_name(const struct profile *p, uint32_t tid);
/* Gives frame id the name name (copied): every stack that holds it reads the new name (a thread
 * frame named before the thread's own name was known). 0; -EINVAL (no such frame, or name
 * NULL); -EEXIST (another frame already reads so); -ENOMEM. */
int profile_frame_rename(struct profile *p, uint32_t id, const char *name);

/*
 * Build-ids of native modules: the GNU build-id (NT_GNU_BUILD_ID note) of the file that native
 * frames' module names, as hex text ("8d3f...", what `readelf -n` prints). pprof writes them in
 * its mappings, so that symbol servers and `go tool pprof` can find the exact binary.
 * build_id_hex: an even number of hex digits, 2 to PROFILE_MAX_BUILD_ID, stored lower case.
 * A module holds one build-id: setting it again replaces it. 0, -EINVAL (module NULL or "",
 * build_id_hex not such hex text), -ENOMEM.
 */
#define PROFILE_MAX_BUILD_ID 128        /* hex digits: a 64-byte build-id */
int profile_set_build_id(struct profile *p, const char *module, const char *build_id_hex);
/* Removes module's build-id, if it has one (the others keep their order). */
void profile_drop_build_id(struct profile *p, const char *module);
/* The build-id of module, or NULL when none was set. */
const char *profile_build_id(const struct profile *p, const char *module);
/* The modules with a build-id, in the order they were first set: i < profile_n_build_ids();
 * NULL past them. *ret_module (when not NULL): the module. */
size_t profile_n_build_ids(const struct profile *p);
const char *profile_build_id_at(const struct profile *p, size_t i, const char **ret_module);

#endif
