/*
 * Internal to sampler/: the per-thread event sets (perf.c) and the sampler object that
 * target.c drives. Not for other modules.
 */
#ifndef HWSPY_SAMPLER_INTERNAL_H
#define HWSPY_SAMPLER_INTERNAL_H

#include <pthread.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/ring.h"
#include "sampler/sampler.h"
#include "sampler/sigcapture.h"

#ifndef PERF_FORMAT_LOST
#define PERF_FORMAT_LOST (1u << 4)     /* Linux 6.0 */
#endif

/* tracer.c: the share of a thread's time spent in our stops, over a sliding window of
 * STOP_BUCKETS buckets (SAMPLER_STOP_WINDOW_MS in all), CLOCK_MONOTONIC */
#define STOP_BUCKETS 10
struct stop_budget {
	uint64_t since_ns;              /* the thread's events opened: the window starts no earlier */
	uint64_t resumed_ns;            /* its last stop of ours ended */
	uint64_t first_sample_ns;       /* the first sample drained at the stop at hand (0: none) */
	uint64_t stopped_ns[STOP_BUCKETS]; /* time stopped, by the bucket its stop ended in */
	uint64_t bucket[STOP_BUCKETS];  /* which bucket (time / bucket length) each slot holds */
	bool over;                      /* over budget: its signal is off, its samples read late */
};

struct thread {
	pid_t tid;
	int fds[SAMPLER_MAX_EVENTS];    /* -1 when closed; fds[0] is the group leader */
	uint64_t ids[SAMPLER_MAX_EVENTS];
	uint64_t last[SAMPLER_MAX_EVENTS]; /* running totals at the previous sample */
	void *map;
	size_t map_size;
	struct ring ring;
	bool traced;                    /* PTRACE_SEIZE'd by us */
	bool forwarded;                 /* a signal of the target's own was passed on to it at
	                                 * its last signal-delivery-stop (tracer.c undo_eintr()) */
	bool alive;
	struct stop_budget budget;      /* exact mode by stops */
	/* capture: the BPF_OUTPUT event feeding this ring, its slot in the program's maps */
	int out_fd;
	uint64_t out_id;
	int slot;
	bool prog;                      /* the capture program is on fds[0] */
	/* per-CPU layout (percpu.c): the thread's group on each CPU (ncpu * n_events fds, -1 when
	 * closed), the running totals at its previous sample there; an inherited thread has no
	 * fds of its own (its events came with its creation) */
	int *cpu_fds;
	int n_cpu_fds;
	uint64_t *cpu_last;
	bool inherited;
	/* opts.wall: the switch event, per CPU (percpu: ncpu fds) or the thread's own (1 fd);
	 * -1 when closed */
	int *switch_fds;
	int n_switch_fds;
};

/* percpu.c: one ring per CPU, every thread's group on that CPU writing into it */
struct cpu_ring {
	int fd;                         /* a dummy event owning the ring; -1: CPU not used */
	void *map;
	size_t map_size;
	struct ring ring;
	int out_fd;                     /* capture: the CPU's BPF_OUTPUT event, into this ring */
	uint64_t out_id;
};

/* capture_prog.c: what the capture program sends at an overflow: this header, in its scratch
 * slot, then the nodes (CAPTURE_HDR bytes in), in native byte order */
#define CAPTURE_MAGIC 0x70737768u       /* "hwsp" */
struct capture_record {
	uint32_t magic;                 /* CAPTURE_MAGIC */
	uint32_t status;                /* SAMPLE_CAPTURE_* */
	uint32_t n;                     /* nodes copied */
	uint32_t slot;                  /* the thread's slot in the out map (root_value.slot) */
	uint64_t ip, period;            /* of the overflow: the sample's, to pair them */
	uint64_t head;                  /* the first node's address */
	uint64_t root;                  /* the thread's root, as the program found it */
	uint64_t gil_holder;            /* spec.gil_at: the two words read at the overflow, */
	uint32_t gil_locked;
	uint32_t gil_read;              /* 1 where both reads succeeded */
	uint32_t gc_collecting;         /* spec.gc_at: the word read at the overflow, */
	uint32_t gc_read;               /* 1 where the read succeeded */
	/* the BPF program's split records (capture_split()): where its names area starts in the
	 * program's room (0: not split, every extra in its node), and where the names written
	 * end (0: none); the area [names_at, names_end) comes as a record of its own just before */
	uint32_t names_at, names_end;
	/* capture.switch_regs, at a switch off the CPU: the user registers the thread entered the
	 * kernel with (found 1; 2: no layout of the kernel stack held them; 0: not looked), and
	 * whether they are a system call's entry by the syscall instruction's (cx holds ip, r11
	 * flags); the word under them on the stack (the entry code's return address) */
	uint32_t regs_found, regs_syscall;
	uint64_t orig_ax, ax, di, ss, entry;
};
/* A names area: this header (the magic, then 0), then a slot per node */
#define CAPTURE_NAMES_MAGIC 0x6e616d65u /* "eman" */
#define CAPTURE_NAMES_HDR 8
#define CAPTURE_HDR sizeof(struct capture_record)
_Static_assert(sizeof(struct capture_record) == 128, "the capture record's header is 128 bytes");

/* The roots map's value (capture.c writes it, the program reads it and may write it), keyed by
 * the thread id (u32). */
struct root_value {
	uint64_t root;
	uint32_t slot, tries;           /* tries: the program's searches for the root, failed */
};
_Static_assert(sizeof(struct root_value) == 16, "a roots map value is 16 bytes");

/* What a node's check is made of (capture_prog.c's node_check() builds it on the program's
 * stack): digest first holds 0, then each node's check. The ring is the one the record goes
 * to, whose records the reader reads in their order: the CPU's (per CPU), else the thread's
 * own (its tid); a check known for one ring is sent again on another. */
struct capture_known_key {
	uint64_t digest;                /* of a node's identity extras, the ring and the epoch */
	uint32_t ring;
	uint32_t epoch;
};
_Static_assert(sizeof(struct capture_known_key) == 16, "a known check's inputs are 16 bytes");
#define CAPTURE_KNOWN_BITS 13           /* the known map: 2^13 sets ... */
#define CAPTURE_KNOWN_WAYS 4            /* ... of 4 checks and a count (u64s): 320 KiB */
/* The epoch only ever grows: the program adds 1 where a record's output failed (the checks it
 * marked known went nowhere), the reader moves it to the next multiple of this to forget */
#define CAPTURE_EPOCH_STEP 65536u

/* Identities by their check: an open-addressed table of cap entries (a key 0: empty), each
 * identity capture_ident_bytes() long. */
struct capture_ids {
	uint64_t *keys;
	unsigned char *bytes;
	size_t cap, n;
};

/* capture.c: the program, its maps, and the capture record waiting for its sample. */
struct capture {
	int prog_fd, roots_fd, scratch_fd, out_fd;
	/* Per CPU, the events carry the entry program from their open: it tail-calls the program
	 * in the progs map's slot 0, once there is one (capture.c) */
	int entry_fd, progs_fd;
	/* The codes whose identity and names a ring's records carried (spec.n_identity: later
	 * ones leave them out), an array of checks (capture_prog.c's known_check()); and the
	 * epoch in them (an array of one u32), moved on to forget them all (capture_forget()) */
	int known_fd, epoch_fd;
	uint32_t epoch;
	/* The program's BTF where it calls bpf_loop (capture.c), and whether the loaded one does:
	 * no_loop_helper (a test) makes it the bounded loop's, as on a kernel before 5.17 */
	int btf_fd;
	bool loop_helper, no_loop_helper;
	bool percpu;                    /* the program outputs to the current CPU's ring */
	/* At a switch off the CPU, the program reads why (read_switch_regs()): per CPU, a record
	 * goes out for a thread with no root too. The switch samples then carry no kernel
	 * callchain (perf.c) */
	bool switch_regs;
	bool regs_only;                 /* the program reads those alone (capture_start_regs()) */
	pid_t pid;                      /* the target: the program searches only its threads */
	/* The ids the roots map is keyed by are perf's: those of hwspy's own PID namespace. Outside
	 * the initial one (hwspy in a container) the program gets them with the namespace-aware
	 * helper, for this namespace (pidns: its nsfs device, kernel encoding, and inode). */
	bool pidns_chosen;              /* capture_load() chose (once; a test may choose first) */
	bool pidns;
	uint64_t pidns_dev, pidns_ino;
	struct sampler_capture_spec spec;
	unsigned char *slots;           /* bitmap of the out map's slots in use */
	unsigned char *held;            /* RING_SCRATCH_SIZE: the last capture record's data, */
	const unsigned char *held_at;   /* ... or where it lies in the ring being read (not copied:
	                                 * its sample follows it there; capture_settle()) */
	size_t held_len, held_len_used;
	unsigned char *names;           /* RING_SCRATCH_SIZE: a names area's record, held as */
	const unsigned char *names_at;  /* ... held_at, for the nodes record after it */
	size_t names_len;
	pid_t names_tid;
	pid_t held_tid;
	struct sample_capture out;
	/* A split record's identities by their check (capture_ids.c): since the last
	 * capture_forget(), and before it (the records still on their way, of the epoch before),
	 * and where those of the record being read lie (sample_capture.ident) */
	struct capture_ids ids[2];
	const unsigned char *ident[SAMPLER_CAPTURE_MAX_CHAIN];
	size_t max_nodes;               /* the loaded program's most nodes a record (its tail's) */
	/* the thread whose root a SAMPLER_EVENT_CAPTURE_THREAD asks for (0: none asked), and the
	 * answer sampler_capture_set_root() gave from inside it */
	pid_t asking;
	uint64_t answer;
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
	struct sampler *s;              /* the jobs' first argument (NULL: a one-shot stop, stop.h) */
	void *arg;
	int ret;
};

struct sampler {
	struct sampler_opts opts;
	struct event_spec events[SAMPLER_MAX_EVENTS];
	struct perf_event_attr attrs[SAMPLER_MAX_EVENTS];
	struct perf_event_attr switch_attr;    /* opts.wall */
	uint64_t *switch_ids;           /* ... its events' ids, ascending (samples tell by id) */
	size_t n_switch_ids, cap_switch_ids;
	/* opts.leaders: the ids of the events that sample on their own, ascending, each with its
	 * event's index (samples tell by id); the leaders that weigh their count's delta; those
	 * whose overflow stops its thread (exact mode); each group member's place in events[0]'s
	 * group read */
	struct lead_id {
		uint64_t id;
		size_t event;
	} *lead_ids;
	size_t n_lead_ids, cap_lead_ids;
	uint32_t lead_by_count, lead_signal;
	size_t group_pos[SAMPLER_MAX_EVENTS];
	pid_t pid;
	bool launched;                  /* pid is our child */
	int signo;                      /* exact mode: the signal our events raise */
	int old_signo;                  /* the one before, if the target began to catch it */
	struct tracer tracer;           /* exact mode */
	bool paused;                    /* sampler_pause(): nothing traced, events disabled */
	int sigfd;                      /* signalfd for SIGCHLD (opts.sigchld), or -1 */
	int pid_fd;                     /* an attached target's pidfd: readable once it has exited
	                                 * (the run loop looks at once, not at its next scan); -1 */
	int wake_fd;                    /* eventfd that sampler_wake() writes, every run loop's
	                                 * poll waits on too (read back there); -1: none */
	bool chld_blocked;              /* sampler_new() blocked SIGCHLD (the caller had not):
	                                 * sampler_free() unblocks it */
	struct thread *threads;
	size_t n_threads, cap_threads;
	unsigned char *scratch;         /* RING_SCRATCH_SIZE */
	struct sampler_stats stats;
	sampler_sample_fn fn;
	void *ctx;
	void (*resumed)(void *ctx);
	uint64_t last_scan_ns;
	uint64_t capture_cut_ns;        /* the last sample whose capture held too few nodes (its
	                                 * time), 0: none yet (target.c, read_cap_ms()) */
	uint64_t thread_born_ns;        /* when the table last took a thread (read_cap_ms()) */
	struct capture capture;
	struct sigcap *sig;             /* opts.signal (sigcapture.h) */
	struct late_queue *late;        /* ... its samples held for their record (latehold.c) */
	uint64_t sig_cookie;            /* ... the events' sig_data */
	int capture_error;              /* of the capture started by sampler_new() */
	uint64_t execs_told;            /* stats.execs as of the last SAMPLER_EVENT_EXEC */
	unsigned ring_pages;            /* data pages for the next ring (shrinks, see sampler.h) */
	unsigned ring_floor;            /* the fewest data pages a ring may have */
	int fd_limit;                   /* RLIMIT_NOFILE, raised if asked (perf_raise_nofile()) */
	pid_t *left_out;                /* sorted: threads counted in threads_failed, not retried */
	size_t n_left_out, cap_left_out;
	const struct ring_layout *layout; /* the ring layout, chosen once in sampler_new() */
	bool weigh_by_count;            /* events[0] counts occurrences: a sample weighs its count's
	                                 * delta, not its period (perf_build_attrs()) */
	int ncpu;
	struct cpu_ring *cpus;          /* ncpu rings, made with the first thread's events */
	pid_t *unknown;                 /* sorted: threads the last scan found without a FORK
	                                 * record (per CPU: a left-out thread's), added if the
	                                 * next scan finds them unknown still */
	size_t n_unknown;
	bool stopped;                   /* sampler_stop() ran */
	bool brk;                       /* sampler_break() asked sampler_run() to return */
	unsigned tree_scans;            /* opts.subprocesses, attach: scans left that look at the
	                                 * tree's threads too (tree.c) */
};

/* target.c */
/* Tells opts.event_fn (if any) of kind for tid (see struct sampler_event). */
void sampler_tell(struct sampler *s, enum sampler_event_kind kind, pid_t tid);
struct thread *thread_find(struct sampler *s, pid_t tid);
/* Adds tid and opens its events. The thread must already be traced in exact mode. */
int thread_add(struct sampler *s, pid_t tid, bool traced);
void thread_gone(struct sampler *s, struct thread *t);
/* Finds threads not yet known and adds them (seizing them first in exact mode): how many,
 * or -errno (fail_hard: the first failure; else failures are counted). */
int scan_threads(struct sampler *s, bool fail_hard);
/* Whether process pid runs: some thread of it does (its main thread may have exited). */
bool proc_alive(pid_t pid);
void target_ended(struct sampler *s, int status);
/* Forks argv (argv[0] searched in PATH) stopped before its exec (it raised SIGSTOP, seen by
 * waitpid WUNTRACED), every signal unblocked, in a process group of its own unless the
 * caller's is its terminal's foreground group; SIGCONT (or a tracer) lets it exec. *ret_pipe
 * (CLOEXEC) then reads the exec's errno (an int) if it failed, end of file if it succeeded.
 * 0, or -errno (-ECHILD: it did not stop; it is killed and reaped then). */
int target_fork_stopped(char *const *argv, pid_t *ret_pid, int *ret_pipe);
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
/* The bytes in a ring of pages data pages that wake the run loop (not in exact mode, which
 * wakes at each sample): a quarter of it in capture mode (its records are read late at no
 * cost, and a 14 KB record a sample at 1 kHz woke it 116 times a second at an eighth), an
 * eighth otherwise. */
uint32_t perf_ring_watermark(const struct sampler *s, size_t pages);
/* Opens t's events and maps its ring (at s->ring_pages, halved down to s->ring_floor while the
 * mmap goes over the locked-memory limit). 0, or -errno: -ENOBUFS the ring at the floor is
 * still over the limit, -EMFILE, -ENOMEM, -ESRCH (t exited), ... */
int perf_thread_open(struct sampler *s, struct thread *t);
/* Counts thread tid as left out because of err (a perf_thread_open() or thread table error),
 * once: it is remembered (up to MAX_LEFT_OUT threads) and not tried again. */
void perf_thread_failed(struct sampler *s, pid_t tid, enum sampler_fail why, int err);
bool perf_thread_left_out(const struct sampler *s, pid_t tid);
int perf_cmp_tid(const void *a, const void *b);        /* qsort / bsearch of pid_t */
/* perf_event_open() with CLOEXEC, through perf_fd_keep(): an fd or -errno. */
int perf_open_fd(const struct sampler *s, struct perf_event_attr *a, pid_t tid, int cpu, int group);
void perf_deliver(struct sampler *s, struct thread *t, const struct perf_event_header *h,
		  bool stopped, uint64_t *last);
/* Hands smp, its values and capture final, to s->fn (counted). */
void perf_hand(struct sampler *s, struct sample *smp);

/* latehold.c: opts.signal's samples read before their signal's record. late_init(): the
 * queue and its pool, once (0, -ENOMEM); late_free(): NULL-safe. late_hold(): keeps a copy of
 * the sample smp read from h (values computed, not delivered; period: its own) if it is young
 * and a slot is free: whether it did. late_retry(): delivers the held samples of thread tid
 * (all of them, paired or not), or with tid 0 those whose record has come and those too old
 * to wait, or with all every one. */
int late_init(struct sampler *s);
void late_free(struct sampler *s);
/* Pairs smp (its values computed; period: its own) with its signal's record, smp->capture
 * set: whether the record was there. */
bool late_pair(struct sampler *s, struct sample *smp, uint64_t period);
bool late_hold(struct sampler *s, const struct perf_event_header *h, const struct sample *smp,
	       uint64_t period);
void late_retry(struct sampler *s, pid_t tid, bool all);
/* Forgets the left-out threads not in live (sorted: every thread of the target, now), so that
 * a new thread that gets the number of one gone is tried (and counted) afresh. */
void perf_left_out_prune(struct sampler *s, const pid_t *live, size_t n);
enum sampler_fail perf_fail_reason(int err);
/* With opts.raise_nofile, raises the soft RLIMIT_NOFILE to the hard limit; keeps the soft
 * limit in s->fd_limit. */
void perf_raise_nofile(struct sampler *s);
/* The same for any caller (count.c), raising only if raise: the soft limit now (0: unknown). */
int perf_nofile_raise(bool raise);
/* perf_fd_keep() against a limit from perf_nofile_raise(). */
int perf_fd_keep_under(int fd_limit, int fd);
/* Takes a new event fd (or -errno) and keeps it, unless it eats into the reserve of fds that
 * hwspy needs besides its events (/proc, the symbolizer's files): -EMFILE then, fd closed. */
int perf_fd_keep(const struct sampler *s, int fd);
/* O_ASYNC and s->signo on t's sampling event (its owner, the thread, set already): on, or off
 * (no signal of ours is sent after that). 0 or -errno. */
int perf_thread_signal(struct sampler *s, struct thread *t, bool on);
void perf_thread_disable(struct thread *t);
void perf_thread_close(struct sampler *s, struct thread *t);
/* Decodes every record waiting in t's ring; samples go to s->fn with stopped as given. */
void perf_thread_drain(struct sampler *s, struct thread *t, bool stopped);
/* The same, at most max records: whether more are waiting (as of the read's start). */
bool perf_thread_drain_some(struct sampler *s, struct thread *t, bool stopped, unsigned max);
/* Counts what a ring's PERF_RECORD_LOST or PERF_RECORD_THROTTLE record says; others: nothing. */
void perf_note_record(struct sampler *s, const struct perf_event_header *h);

/* A run loop's wait: how long to poll (ms, at most cap_ms (0: 100), no further than the end of a run that
 * began at start_ns and lasts duration_ns, 0: no limit), or -1 once it is over. */
int sampler_wait_ms(uint64_t start_ns, uint64_t duration_ns, unsigned cap_ms);
/* After a poll that had s->wake_fd at revents: reads the wake-ups back (the run loop then
 * looks at its stop flag). */
void sampler_wake_clear(struct sampler *s, short revents);
/* A run loop's poll begins with these SAMPLER_POLL_HEAD entries: s->sigfd and s->pid_fd (-1,
 * which poll() skips, where there is none). sampler_poll_head_read(), after the poll: true if
 * the target may have changed state (a SIGCHLD read, the attached process gone: its pidfd is
 * closed then, so that it cannot keep the next poll from sleeping). */
#define SAMPLER_POLL_HEAD 2
void sampler_poll_head(const struct sampler *s, struct pollfd *pfd);
bool sampler_poll_head_read(struct sampler *s, const struct pollfd *pfd);

/* The ring layout (sampler.h's "Rings"): a ring per thread (perthread.c) or per CPU (percpu.c),
 * two implementations of these verbs, chosen once by ring_layout_choose() in sampler_new() (as
 * redis ae.c picks its backend); the rest of the sampler calls them through s->layout and
 * never asks which it has. */
struct ring_layout {
	const char *name;
	bool inherit;                   /* the events inherit (per CPU: threads started later carry
	                                 * them, records of other tasks may reach the rings, a
	                                 * group read of an inherited event goes by position) */
	int (*init)(struct sampler *s); /* before any event opens: 0 or -errno */
	/* After perf_thread_open()'s reset of t: opens t's events and ring(s), enabled; 0, or
	 * -errno with t's fds closed */
	int (*thread_open)(struct sampler *s, struct thread *t);
	/* Decodes every ring: samples to s->fn (not stopped) */
	void (*drain)(struct sampler *s);
	/* Waits up to timeout_ms for a ring to fill or a SIGCHLD (s->sigfd, where there is one);
	 * the caller then drains (drain_all()). True if a SIGCHLD came. */
	bool (*poll)(struct sampler *s, int timeout_ms);
	void (*free)(struct sampler *s);
};
extern const struct ring_layout ring_per_thread, ring_per_cpu;
/* percpu.c: the one selection point: per CPU, unless exact by stops or, attaching, the threads
 * there now would take more fds per CPU than the limit leaves and than a ring per thread
 * takes (raises RLIMIT_NOFILE first where opts.raise_nofile asks, to see it). */
const struct ring_layout *ring_layout_choose(struct sampler *s);
/* perf.c: the per-thread layout's events of t and their ring, shrunk to fit the locked-memory
 * limit (see perf_thread_open()): 0 or -errno */
int perf_open_mapped(struct sampler *s, struct thread *t, long psz);

/* percpu.c: the per-CPU layout's own (its verbs are static, in ring_per_cpu) */
/* perf.c, opts.wall: opens t's switch event on cpu (-1: any) into the ring of out_fd (fd
 * slot k of t->switch_fds), noting its id; the attr of sample record h (the switch event's or
 * the group's). */
int perf_switch_open(struct sampler *s, struct thread *t, int cpu, int out_fd, int k);
/* perf.c: whether the records of process pid are the caller's: the target's, or with
 * opts.subprocesses any (only the target and its descendants inherit its events). */
bool perf_pid_followed(const struct sampler *s, pid_t pid);
/* Closes t's switch events, adding what the ring lost of their records to stats.lost_switches. */
void perf_switch_close(struct sampler *s, struct thread *t);
/* The attr a sample record h is laid out by (the switch event's, a leader's or the group's),
 * and the index of the event it is a sample of in *ret_event (0: events[0], or the switch
 * event; may be NULL). */
const struct perf_event_attr *perf_sample_attr(const struct sampler *s,
					       const struct perf_event_header *h, size_t *ret_event);
/* perf.c, opts.leaders: whether events[i] samples on its own; opens t's leaders on cpu (-1:
 * any) into the ring of out_fd, at fds[i] of the fds given (t->fds, or its CPU's part of
 * t->cpu_fds), each disabled, noting their ids; enables them; t's fds that signal it (exact
 * mode), on or off. */
bool perf_is_leader(const struct sampler *s, size_t i);
int perf_leaders_open(struct sampler *s, struct thread *t, int cpu, int out_fd, int *fds);
int perf_leaders_enable(const struct sampler *s, const int *fds);
/* Enables t's group and its leaders (per thread): 0 or -errno. */
int perf_thread_enable(const struct sampler *s, struct thread *t);
/* Whether fd is one of t's that signal it (events[0], a leader whose overflow stops it). */
bool perf_thread_signals_by(const struct sampler *s, const struct thread *t, int fd);
/* percpu.c: a thread's groups on the CPUs (t->cpu_fds; none: no-ops), for perf.c's
 * perf_thread_disable() / perf_thread_close() */
void percpu_thread_disable(struct thread *t);
void percpu_thread_close(struct sampler *s, struct thread *t);
/* target.c: the thread tid of the table, added (inherited: no events of its own) if asked. */
struct thread *sampler_thread_get(struct sampler *s, pid_t tid, bool add);

/* tree.c (opts.subprocesses, attach): the processes the target started before the attach */
#define TREE_MAX_PROCS 256
/* Opens the events of every thread of procs[0..n) (listed before the target's events opened):
 * a thread that cannot have them is counted as left out, the others are sampled on. The next
 * TREE_SCANS periodic scans look at the tree's threads too. */
#define TREE_SCANS 3
void tree_attach(struct sampler *s, const pid_t *procs, size_t n);
/* A periodic scan, while s->tree_scans: the threads of the target's live descendants,
 * appended to tids[n..max): the new count. */
size_t tree_tasks(struct sampler *s, pid_t *tids, size_t n, size_t max);

/* count.c: the two system calls counting makes, a seam for the tests (counter_opts.sys;
 * NULL: the kernel's). open: perf_event_open(attr, tid, cpu -1, group_fd, CLOEXEC), an fd or
 * -errno; read: read(2) of n bytes into buf, bytes read or -errno. */
struct counter_sys {
	int (*open)(void *ctx, struct perf_event_attr *attr, pid_t tid, int group_fd);
	ssize_t (*read)(void *ctx, int fd, void *buf, size_t n);
	void *ctx;
};
/* The kernel's calls (ctx unused): what a test's seam passes on to. */
extern const struct counter_sys count_kernel_sys;

/* capture_prog.c */
#define CAPTURE_MAX_INSNS 65536         /* a privileged program may have 1M */
struct bpf_insn;
/* Whether the program can be made for spec (sizes, offsets that fit its immediates). */
bool capture_spec_ok(const struct sampler_capture_spec *spec);
/* The entry program: tail-calls slot 0 of the progs map (a BPF_MAP_TYPE_PROG_ARRAY), else
 * lets the sample through uncaptured; into insn[0..*ret_n), at most max: 0 or -E2BIG. */
int capture_generate_entry(int progs_fd, struct bpf_insn *insn, size_t max, size_t *ret_n);
/* The program for spec and c (its maps, the target's pid, the PID namespace) into insn[0..
 * *ret_n), at most max instructions: 0, or -E2BIG where it does not fit. helper: its nodes
 * by bpf_loop, its callback a function from *ret_callback (its BTF: capture.c); else a
 * bounded loop, *ret_callback 0. */
int capture_generate(const struct sampler_capture_spec *spec, const struct capture *c,
		     bool helper, struct bpf_insn *insn, size_t max, size_t *ret_n,
		     size_t *ret_callback);
/* A node's bytes with every extra (the signal mode's records, and a BPF program's with no
 * names to split off). */
size_t capture_stride(const struct sampler_capture_spec *spec);
/* The BPF program's records where spec.n_identity splits the extras (capture_split()): a node
 * carries its address, its bytes and its code's check (capture_node_stride() bytes: the
 * check known_check() makes of its identity extras, the tid and the epoch; bit 0 set where the
 * node's slot holds the identity, clear where its ring's records carried it before). Node
 * k's extras, all of them, where they were read (the identity ones of every node, the names
 * where the check was new), lie in slot k of the names area (capture_names_at(): its header,
 * then slot k at CAPTURE_NAMES_HDR + k x capture_names_stride(), laid out as a whole node's
 * extras), which comes as a record of its own, up to the nodes record's names_end, just
 * before it; a slot whose identity its ring's records carried before holds address 0 for
 * every extra. The reader hands each node's identity on by pointer (capture_ids.c). */
bool capture_split(const struct sampler_capture_spec *spec);
size_t capture_node_stride(const struct sampler_capture_spec *spec);
size_t capture_names_stride(const struct sampler_capture_spec *spec);
/* The bytes of a node's identity extras (addresses and bytes), the first in its slot. */
size_t capture_ident_bytes(const struct sampler_capture_spec *spec);
size_t capture_names_at(const struct sampler_capture_spec *spec);
/* The most nodes a record of spec has room for: SAMPLER_CAPTURE_MAX_CHAIN split, the nodes
 * past SAMPLER_CAPTURE_MAX_NODES a tail (their check 0: no identity, no names; a program
 * with bpf_loop copies them), else SAMPLER_CAPTURE_MAX_NODES. */
size_t capture_chain_max(const struct sampler_capture_spec *spec);
/* ... and the program's, with bpf_loop (helper) or the bounded loop's, which has no tail (its
 * verifier follows each node) */
size_t capture_prog_nodes(const struct sampler_capture_spec *spec, bool helper);
/* The scratch map's value: a record of capture_chain_max() nodes, names and all. */
size_t capture_value_size(const struct sampler_capture_spec *spec);
/* Where spec.stacked, the scratch map's value holds after it the window the program reads a
 * stacked chain's nodes from (capture_prog.c's read_node()): its address in the target and
 * its length (u64s), then CAPTURE_WINDOW bytes, one page. */
#define CAPTURE_WINDOW 4096
#define CAPTURE_WINDOW_HDR 16
/* Past the record: the node loop's state where the program calls bpf_loop (capture_prog.c's
 * LOOP_*), CAPTURE_LOOP_STATE bytes; then the window; the scratch map's value in all. */
#define CAPTURE_LOOP_STATE 40
size_t capture_loop_at(const struct sampler_capture_spec *spec);
size_t capture_window_at(const struct sampler_capture_spec *spec);
size_t capture_reuse_at(const struct sampler_capture_spec *spec, uint32_t i);
/* Past the reuse tables: the code cache (spec.version_at), where capture_code_cache() */
bool capture_code_cache(const struct sampler_capture_spec *spec);
/* ... and whether c's program for it does: with bpf_loop (helper), names once */
bool capture_caches_codes(const struct capture *c, const struct sampler_capture_spec *spec,
			  bool helper);
size_t capture_codes_at(const struct sampler_capture_spec *spec);
size_t capture_scratch_size(const struct sampler_capture_spec *spec);

/* capture_ids.c */
/* Every identity forgotten (capture_forget()): those kept so far serve the records still on
 * their way, and are freed at the next; or all freed (capture_close(), and a new spec's
 * program: other identities). */
void capture_ids_forget(struct capture *c);
void capture_ids_free(struct capture *c);
/* A split record's n nodes and its names area's n_names slots (NULL, 0: none came): each
 * node's identity from its slot, or the table by its check, into out's ident; its names in
 * its slot past the identity: out's names and names_stride. */
void capture_idents(struct sampler *s, const unsigned char *nodes, size_t n,
		    const unsigned char *names, size_t n_names, struct sample_capture *out);

/* capture.c */
/* Chooses how the program keys threads (struct capture's pidns): hwspy's PID namespace's
 * device and inode; -errno (the initial namespace taken) when /proc/self/ns/pid is unreadable. */
int capture_pidns(struct capture *c);
#define CAPTURE_INIT { .prog_fd = -1, .roots_fd = -1, .scratch_fd = -1, .out_fd = -1, \
		       .entry_fd = -1, .progs_fd = -1, .known_fd = -1, .epoch_fd = -1, \
		       .btf_fd = -1 }
/* Loads the entry program and its progs map, once: 0 or -errno (BPF not allowed). */
int capture_entry_load(struct capture *c);
/* With switch_regs, until the caller's spec is known (a launched command): a program that
 * reads no thread's frames, its records NO_ROOT with the switch's registers. 0 or -errno. */
int capture_start_regs(struct sampler *s);
/* Loads the program for spec (c->prog_fd; per CPU, not run before capture_publish()): 0 or
 * -errno. */
int capture_load(struct capture *c, const struct sampler_capture_spec *spec);
/* Per CPU: the entry on the events runs the loaded program from now on (replacing an image's
 * before an exec): 0, or -errno with the program closed. */
int capture_publish(struct capture *c);
/* Before a ring's read ends (ring_read_done(), which frees its space for the kernel): a capture
 * record held there, its sample still to come, is copied into c->held. */
void capture_settle(struct capture *c);
/* The program's records carry every code's names again (a record lost, or the reader's cache
 * of them cleared): 0 or -errno. */
int capture_forget(struct capture *c);
void capture_close(struct capture *c);
/* Opens t's BPF_OUTPUT event into its ring and puts the program on it (no-op before the
 * program is loaded). */
int capture_thread_open(struct sampler *s, struct thread *t);
void capture_thread_close(struct sampler *s, struct thread *t);
/* Keeps the capture record h (from tid's ring; 0: a CPU's) for the sample that follows it. */
void capture_hold(struct sampler *s, pid_t tid, const struct perf_event_header *h);
/* Per CPU: opens CPU c's BPF_OUTPUT event into its ring (no-op before the program is loaded). */
int capture_cpu_open(struct sampler *s, int c);
void capture_cpu_close(struct sampler *s, int c);
/* Per CPU: puts thread t's root in the program's map (an inherited thread, at its FORK). */
void capture_thread_root(struct sampler *s, struct thread *t);
const struct sample_capture *capture_match(struct sampler *s, const struct thread *t,
					   const struct sample *smp);

#endif
