/*
 * hwspy dump: the current stack of every thread of a Python process, once, like py-spy dump:
 * each thread's id and name, whether it holds the GIL, running or waiting (and on what), its
 * Python frames innermost first (and native frames with --native).
 *
 * Order, to stop the target for as short a time as possible: the threads' states and system
 * calls from /proc, the threads that must not be stopped read as they wait (dump.h), then the
 * stop of the others (dump_stop.c) for their walks alone (and, with --native, the registers and
 * stack copies), then after the release what needs no stop: Python's thread names, the fds'
 * names of the wait reasons, the native unwinding and symbols. --nonblocking
 * stops nothing: each walk is verified and retried when torn. --subprocesses: the same for
 * each process of the target's tree (its children, theirs ...), one after the other.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.h"
#include "base/procfs.h"
#include "base/outfile.h"
#include "cli/cli.h"
#include "cli/dump.h"
#include "cli/format.h"
#include "cli/record.h"
#include "output/output.h"
#include "pyframes/pyframes.h"
#include "symbolizer/symbolizer.h"

#define FRAMES_MAX   512        /* Python frames kept per thread (the innermost) */
#define TORN_TRIES   20         /* a running thread: walks before giving up (torn) */
#define BLOCKED_TRIES 3         /* a blocked thread: reads before it is taken as running */
#define ROUNDS       3          /* reads of waiting threads, then stops of running ones */
#define COMMAND_MAX  1024
#define MAX_PROCESSES 256       /* --subprocesses: processes dumped, the target's tree */

struct dump_opts {
	pid_t pid;
	bool native, json, nonblocking, subprocesses;
	const char *output;
};

/* How a thread's stack was read */
enum dump_read {
	READ_NONE,
	READ_BLOCKED,           /* blocked in the kernel all along the read: as it was */
	READ_STOPPED,           /* under a stop of ours */
	READ_RUNNING,           /* as it ran (--nonblocking, or it would not stop): a walk
	                         * checked for tearing, not an instant's stack */
};

struct thread_dump {
	pid_t tid;
	enum dump_read how;
	char name[PYFRAMES_THREAD_NAME_MAX];
	struct dump_task task;
	char wait[192];
	int gil;                        /* 1 holds it, 0 not, -1 unknown */
	bool gil_read;                  /* its stack is as it was when the GIL was read */
	uint64_t tstate;                /* 0: none */
	struct py_frame *frames;
	size_t n_frames;
	struct pyframes_cut cut;
	int walk;                       /* 0, or the walk's -errno (-ENOENT: no thread state) */
	uint64_t regs[DUMP_N_REGS];     /* --native: in perf's REGS_USER order (dump.h) */
	bool regs_ok;
	unsigned char *stack;           /* ... a copy of its stack from SP (stack_len bytes) */
	size_t stack_len;
	uint64_t ips[DUMP_NATIVE_MAX];
	size_t n_ips;
	bool native_ok;
};

struct dump {
	struct dump_opts o;
	char command[COMMAND_MAX];
	const struct pyframes_info *info;
	struct pyframes *pf;
	struct symbolizer *sym;
	struct thread_dump *t;
	size_t n;
	size_t n_blocked, n_stopped, n_running;     /* threads read each way */
	uint64_t stopped_ns;
	bool quiet;                     /* a child (--subprocesses): why it cannot be read goes
	                                 * into error, not to stderr */
	char error[160];
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hwspy dump -p PID [--native] [--json] [--nonblocking] [--subprocesses]\n"
		"                  [-o FILE]\n\n"
		"Prints the current stack of every thread of a Python process, once: its id and\n"
		"name, whether it holds the GIL, running or waiting (and on what), its Python frames\n"
		"innermost first. A thread waiting in a call that an interruption would end (epoll,\n"
		"a socket with a timeout ...) is read as it waits (it cannot change its stack); the\n"
		"others are stopped while their stacks are read (a fraction of a millisecond for a\n"
		"few threads), then let go.\n\n"
		"  -p, --pid PID      the process\n"
		"      --native       native frames too (DWARF unwinding of each thread's stack)\n"
		"      --json         one JSON object instead of text\n"
		"      --nonblocking  stop nothing: read the stacks as the threads run\n"
		"      --subprocesses the processes it started too (and theirs), each in turn\n"
		"  -o, --output FILE  write there (whole or not at all) instead of standard output\n");
}

static int parse_args(int argc, char **argv, struct dump_opts *o)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "native", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "nonblocking", no_argument, NULL, 'b' },
		{ "subprocesses", no_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->output = "-";
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v <= 0 || v > (1 << 22)) {
				log_error("'%s' is no process id; give -p PID", optarg);
				return -1;
			}
			o->pid = (pid_t) v;
			break;
		case 'n': o->native = true; break;
		case 'j': o->json = true; break;
		case 'b': o->nonblocking = true; break;
		case 's': o->subprocesses = true; break;
		case 'o': o->output = optarg; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s'; hwspy dump takes -p PID", argv[optind]);
		return -1;
	}
	if (!o->pid) {
		log_error("no process given; run 'hwspy dump -p PID'");
		return -1;
	}
	if (o->native && o->nonblocking) {
		log_error("--native unwinds each running thread's stack while it is stopped: "
			  "drop --nonblocking to have native frames");
		return -1;
	}
	return 0;
}

/* ---- the target ---- */

/* /proc/PID/cmdline with its NULs as blanks, cut to fit. */
static void read_command(pid_t pid, char *buf, size_t len)
{
	char path[64];
	size_t n = 0;
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0' || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = '\0';
}

static int cmp_tid(const void *a, const void *b)
{
	const struct thread_dump *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The threads of the target (at most DUMP_MAX_THREADS), sorted. */
static int list_threads(struct dump *d)
{
	char path[64];
	struct dirent *e;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int) d->o.pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	d->t = calloc(DUMP_MAX_THREADS, sizeof(*d->t));
	if (!d->t) {
		closedir(dir);
		return -ENOMEM;
	}
	while ((e = readdir(dir)) && d->n < DUMP_MAX_THREADS) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (end != e->d_name && !*end && tid > 0)
			d->t[d->n++].tid = (pid_t) tid;
	}
	closedir(dir);
	qsort(d->t, d->n, sizeof(*d->t), cmp_tid);
	return d->n ? 0 : -ESRCH;
}

/* The one line for a target dump cannot read; 1. */
static int target_error(struct dump *d, int r, const struct pyframes_info *info)
{
	char what[32];

	snprintf(what, sizeof(what), "pid %d", (int) d->o.pid);
	if (d->quiet) {
		snprintf(d->error, sizeof(d->error), "%s", r == -ESRCH ? "gone" :
			 r == -ENOENT ? "not a Python process" :
			 r == -ENOTSUP ? "unsupported Python" :
			 r == -EPERM || r == -EACCES ? "not allowed" : strerror(-r));
		return 1;
	}
	if (r == -ESRCH)
		log_error("no process with pid %d", (int) d->o.pid);
	else if (r == -EPERM || r == -EACCES)
		record_permission_error(what, d->o.pid, false);
	else if (r == -ENOENT)
		log_error("%s is not a Python process (no libpython or _PyRuntime found); hwspy "
			  "dump reads Python stacks", what);
	else if (r == -ENOTSUP)
		log_error("%s runs unsupported Python %s; hwspy supports 3.8-3.14", what,
			  info->version[0] ? info->version : "(unknown version)");
	else if (r == -EBADMSG)
		log_error("cannot read the Python frames of %s: %s", what, info->error);
	else
		log_errno(r, "cannot read the Python interpreter of %s", what);
	return 1;
}

/* ---- reading the threads ---- */

/* One walk of a thread's Python stack into t (its frames copied out of buf), tries times at
 * most while torn (-EAGAIN, verify on). Returns the walk's result. */
static int walk_thread(struct dump *d, struct thread_dump *t, struct py_frame *buf, int tries)
{
	size_t n = 0;
	int r = -EAGAIN;

	free(t->frames);
	t->frames = NULL;
	t->n_frames = 0;
	memset(&t->cut, 0, sizeof(t->cut));
	for (int i = 0; i < tries && r == -EAGAIN; i++)
		r = pyframes_thread_stack(d->pf, t->tid, buf, FRAMES_MAX, &n, &t->cut);
	t->walk = r;
	if (pyframes_thread_state(d->pf, t->tid, &t->tstate) < 0)
		t->tstate = 0;
	if (r < 0 || n == 0)
		return r;
	t->frames = malloc(n * sizeof(*t->frames));
	if (!t->frames) {
		t->walk = -ENOMEM;
		return -ENOMEM;
	}
	memcpy(t->frames, buf, n * sizeof(*t->frames));
	t->n_frames = n;
	return r;
}

/* --native, a blocked thread: its stack from the SP its system call (or fault) left, and that
 * SP and PC as its registers (the others unknown: the unwinder needs these two to start). */
static void copy_blocked_stack(struct dump *d, struct thread_dump *t)
{
	struct iovec local, remote;
	ssize_t got;

	t->regs_ok = false;
	if (!t->task.sc.sp || !t->task.sc.pc)
		return;
	if (!t->stack) {
		t->stack = malloc(DUMP_STACK_COPY);
		if (!t->stack)
			return;
	}
	local = (struct iovec) { t->stack, DUMP_STACK_COPY };
	remote = (struct iovec) { (void *) (uintptr_t) t->task.sc.sp, DUMP_STACK_COPY };
	/* a partial read ends at the top of the stack's mapping */
	got = process_vm_readv(d->o.pid, &local, 1, &remote, 1, 0);
	if (got <= 0)
		return;
	t->stack_len = (size_t) got;
	memset(t->regs, 0, sizeof(t->regs));
	t->regs[DUMP_REG_SP] = t->task.sc.sp;
	t->regs[DUMP_REG_IP] = t->task.sc.pc;
	t->regs_ok = true;
}

/* A thread blocked in the kernel, read without a stop: its state and switch count before the
 * read (t->task; read afresh first where fresh is false) and after it say whether it ran
 * meanwhile; then it is read again (it may have gone back to its wait), BLOCKED_TRIES times
 * at most. True when read so. */
static bool read_blocked(struct dump *d, struct thread_dump *t, struct py_frame *buf, bool fresh)
{
	for (int i = 0; i < BLOCKED_TRIES; i++) {
		uint64_t switches;
		char state;
		int r;

		if ((i > 0 || !fresh) && dump_task_read(d->o.pid, t->tid, &t->task) < 0)
			return false;
		/* a wait the kernel restarts after a stop is stopped with the running threads:
		 * one instant for all of them (the GIL's waiters and its holder) */
		if (!procfs_task_still(t->task.state) ||
		    (t->task.state == 'S' && wait_restarts(d->o.pid, &t->task.sc)))
			return false;
		r = walk_thread(d, t, buf, 1);
		if (d->o.native)
			copy_blocked_stack(d, t);
		if (procfs_task_sched(d->o.pid, t->tid, &state, &switches) < 0)
			return false;
		/* the interpreter's list of threads, which running threads change, may tear too */
		if ((r == -EAGAIN || r == -EFAULT) && i + 1 < BLOCKED_TRIES)
			continue;
		if (procfs_task_still(state) && switches == t->task.switches) {
			t->how = READ_BLOCKED;
			return true;
		}
	}
	return false;
}

/* The threads not read yet that run, stopped: their walks (and, gil not NULL, the GIL) under
 * the stop. 0, or 1 (said). */
static int read_stopped(struct dump *d, struct pyframes_gil *gil, struct py_frame *buf)
{
	pid_t *tids = malloc(d->n * sizeof(*tids)), tracer = 0;
	size_t *which = malloc(d->n * sizeof(*which)), n = 0;
	struct dump_stop *ds = NULL;
	int r;

	if (!tids || !which) {
		free(tids);
		free(which);
		return log_errno(-ENOMEM, "cannot dump pid %d", (int) d->o.pid), 1;
	}
	for (size_t i = 0; i < d->n; i++)
		if (d->t[i].how == READ_NONE && d->t[i].task.state != 'Z' &&
		    d->t[i].task.state != 'X') {
			which[n] = i;
			tids[n++] = d->t[i].tid;
		}
	r = n ? dump_stop_begin(d->o.pid, tids, n, d->o.native, &ds, &tracer) : 0;
	free(tids);
	if (r == -EPERM && tracer) {
		log_error("cannot stop the running threads of pid %d: it is traced by pid %d (a "
			  "debugger or profiler); add --nonblocking to read them without a stop",
			  (int) d->o.pid, (int) tracer);
	} else if (r == -EPERM) {
		log_error("cannot stop the running threads of pid %d: ptrace refused (Yama "
			  "ptrace_scope or no CAP_SYS_PTRACE); add --nonblocking to read them without "
			  "a stop", (int) d->o.pid);
	} else if (r < 0) {
		log_errno(r, "cannot stop the threads of pid %d", (int) d->o.pid);
	}
	if (r < 0) {
		free(which);
		return 1;
	}
	for (size_t k = 0; k < n; k++) {
		const struct dump_stopped *st = dump_stop_thread(ds, k);
		struct thread_dump *t = &d->t[which[k]];
		struct dump_task now;

		if (!st->stopped)
			continue;
		d->n_stopped++;
		if (dump_task_read(d->o.pid, t->tid, &now) == 0)
			dump_task_at_stop(&t->task, &now);
		(void) walk_thread(d, t, buf, 1);
		t->how = READ_STOPPED;
		t->gil_read = gil != NULL;
		if (st->regs_ok && st->stack) {
			memcpy(t->regs, st->regs, sizeof(t->regs));
			t->regs_ok = true;
			free(t->stack);
			t->stack = malloc(st->stack_len);
			if (t->stack)
				memcpy(t->stack, st->stack, st->stack_len);
			t->stack_len = t->stack ? st->stack_len : 0;
		}
	}
	if (gil && pyframes_gil(d->pf, gil) < 0)
		gil->known = false;
	if (ds)
		d->stopped_ns += dump_stop_end(ds);
	dump_stop_free(ds);
	free(which);
	return 0;
}

/* After the GIL was read (under the stop): a thread read as it waited that has not run since
 * was waiting as read when the GIL was read too, so the two agree (one cannot show waiting
 * for the GIL it holds). One that ran is read again; its GIL is then not known. */
static void recheck_blocked(struct dump *d)
{
	for (size_t i = 0; i < d->n; i++) {
		struct thread_dump *t = &d->t[i];
		uint64_t switches;
		char state;

		if (t->how != READ_BLOCKED)
			continue;
		if (procfs_task_sched(d->o.pid, t->tid, &state, &switches) == 0 &&
		    procfs_task_still(state) && switches == t->task.switches) {
			t->gil_read = true;
			continue;
		}
		t->how = READ_NONE;
		d->n_blocked--;
	}
}

/* --native: each thread's native frames, unwound from the copy of its stack. */
static void unwind_native(struct dump *d)
{
	for (size_t i = 0; d->sym && i < d->n; i++) {
		struct thread_dump *t = &d->t[i];

		if (!t->regs_ok || !t->stack)
			continue;
		t->native_ok = symbolizer_unwind(d->sym, t->regs, DUMP_N_REGS, t->stack,
						 t->stack_len, t->ips, DUMP_NATIVE_MAX,
						 &t->n_ips) >= 0;
	}
}

/* Every thread's stack and the GIL. Without --nonblocking, in rounds: the threads that wait
 * read as they wait, then the ones that run under a stop (the GIL read then, in the first); a
 * thread that was neither when its turn came (it began to run or to wait) is left to the next
 * round. What is left after ROUNDS is read as it runs. 0, or 1 (said). */
static int read_all(struct dump *d, struct pyframes_gil *gil)
{
	struct py_frame *buf = malloc(FRAMES_MAX * sizeof(*buf));
	int r;

	if (!buf)
		return log_errno(-ENOMEM, "cannot dump pid %d", (int) d->o.pid), 1;
	for (int round = 0; !d->o.nonblocking && round < ROUNDS; round++) {
		size_t left = 0;

		for (size_t i = 0; i < d->n; i++) {
			if (d->t[i].how == READ_NONE && read_blocked(d, &d->t[i], buf, round == 0))
				d->n_blocked++;
			left += d->t[i].how == READ_NONE;
		}
		if (round > 0 && !left)
			break;
		if (read_stopped(d, round == 0 ? gil : NULL, buf)) {
			free(buf);
			return 1;
		}
		if (round == 0)
			recheck_blocked(d);
	}
	/* what is left is read as it runs, each walk checked and retried when torn */
	pyframes_set_verify(d->pf, true);
	for (size_t i = 0; i < d->n; i++) {
		struct thread_dump *t = &d->t[i];

		if (t->how != READ_NONE)
			continue;
		(void) walk_thread(d, t, buf, TORN_TRIES);
		t->how = READ_RUNNING;
		t->gil_read = d->o.nonblocking;
		t->regs_ok = false;
		d->n_running++;
	}
	pyframes_set_verify(d->pf, false);
	free(buf);
	if (d->o.nonblocking && pyframes_gil(d->pf, gil) < 0)
		gil->known = false;
	if (d->o.native) {
		r = symbolizer_new(d->o.pid, &d->sym);
		if (r < 0)
			log_errno(r, "cannot read the mappings of pid %d: no native frames",
				  (int) d->o.pid);
		else
			unwind_native(d);
	}
	return 0;
}

/* After the release: Python's names of the threads (else the OS's), each one's GIL and the
 * reason a waiting one waits. */
static void describe(struct dump *d, const struct pyframes_gil *gil, uint64_t gil_addr)
{
	struct pyframes_thread_name *names = calloc(DUMP_MAX_THREADS, sizeof(*names));
	size_t n_names = 0;

	if (!names || pyframes_thread_names(d->pf, names, DUMP_MAX_THREADS, &n_names) < 0)
		n_names = 0;
	for (size_t i = 0; i < d->n; i++) {
		struct thread_dump *t = &d->t[i];

		snprintf(t->name, sizeof(t->name), "%s", t->task.comm);
		for (size_t k = 0; k < n_names; k++)
			if (names[k].tid == t->tid)
				snprintf(t->name, sizeof(t->name), "%s", names[k].name);
		t->gil = !gil->known || !t->gil_read ? -1
			 : gil->locked && t->tstate && gil->holder == t->tstate;
		if (dump_task_waiting(&t->task))
			dump_task_wait(d->o.pid, &t->task, gil_addr, t->wait, sizeof(t->wait));
	}
	free(names);
}

/* ---- output ---- */

static const char *walk_words(int r)
{
	switch (r) {
	case -ENOENT: return "no Python thread state";
	case -EAGAIN: return "Python stack unreadable: it changed under every read";
	case -EFAULT: return "Python stack unreadable";
	case -ESRCH: return "thread gone";
	default: return "Python stack unreadable";
	}
}

static void text_thread(FILE *f, const struct dump *d, const struct thread_dump *t)
{
	fprintf(f, "Thread %d (%s)%s ", (int) t->tid, t->name,
		t->gil == 1 ? " holds the GIL," : "");
	if (dump_task_waiting(&t->task))
		fprintf(f, "waiting: %s:\n", t->wait);
	else
		fprintf(f, "running:\n");
	if (t->walk < 0)
		fprintf(f, "    (%s)\n", walk_words(t->walk));
	else if (t->n_frames == 0)
		fprintf(f, "    (no Python frames)\n");
	for (size_t k = 0; k < t->n_frames; k++)
		fprintf(f, "    %s (%s:%d)\n", t->frames[k].name, t->frames[k].file,
			t->frames[k].line);
	if (t->cut.n || t->cut.more)
		fprintf(f, "    ... %s%" PRIu64 " more frames\n", t->cut.more ? "over " : "",
			t->cut.n);
	if (!d->o.native)
		return;
	fprintf(f, "  native:\n");
	if (!t->native_ok)
		fprintf(f, "    (not unwound: %s)\n", t->how == READ_RUNNING
			? "read as it ran, not stopped" : "its stack could not be copied");
	for (size_t k = 0; k < t->n_ips; k++) {
		struct native_frame nf[8];
		size_t n = 0;

		if (symbolizer_lookup(d->sym, t->ips[k], k > 0, nf, 8, &n) < 0 || n == 0) {
			fprintf(f, "    0x%" PRIx64 "\n", t->ips[k]);
			continue;
		}
		for (size_t j = 0; j < n; j++)
			if (nf[j].name)
				fprintf(f, "    %s (%s)\n", nf[j].name, nf[j].module ? nf[j].module : "?");
			else
				fprintf(f, "    %s+0x%" PRIx64 "\n", nf[j].module ? nf[j].module : "?",
					nf[j].module_offset);
	}
}

static void write_text(FILE *f, const struct dump *d)
{
	fprintf(f, "Process %d: %s\n", (int) d->o.pid, d->command);
	fprintf(f, "Python v%s (%s)\n", d->info->version, d->info->binary);
	if (d->o.nonblocking) {
		fprintf(f, "%zu threads read without a stop (--nonblocking)\n", d->n);
	} else {
		fprintf(f, "%zu thread%s: %zu read as %s waited, %zu stopped for %.3f ms", d->n,
			d->n == 1 ? "" : "s", d->n_blocked, d->n_blocked == 1 ? "it" : "they",
			d->n_stopped, (double) d->stopped_ns / 1e6);
		if (d->n_running)
			fprintf(f, ", %zu read as %s ran", d->n_running,
				d->n_running == 1 ? "it" : "they");
		fputc('\n', f);
	}
	for (size_t i = 0; i < d->n; i++) {
		fputc('\n', f);
		text_thread(f, d, &d->t[i]);
	}
}

static void json_native(FILE *f, const struct dump *d, const struct thread_dump *t)
{
	fprintf(f, ",\"native\":[");
	for (size_t k = 0, first = 1; k < t->n_ips; k++) {
		struct native_frame nf[8];
		size_t n = 0;

		if (symbolizer_lookup(d->sym, t->ips[k], k > 0, nf, 8, &n) < 0)
			n = 0;
		for (size_t j = 0; j < (n ? n : 1); j++, first = 0) {
			fprintf(f, "%s{\"address\":\"0x%" PRIx64 "\",\"function\":", first ? "" : ",",
				t->ips[k]);
			json_write_string(f, n && nf[j].name ? nf[j].name : "");
			fprintf(f, ",\"module\":");
			json_write_string(f, n && nf[j].module ? nf[j].module : "");
			fprintf(f, ",\"file\":");
			json_write_string(f, n && nf[j].file ? nf[j].file : "");
			fprintf(f, ",\"line\":%d}", n ? nf[j].line : 0);
		}
	}
	fprintf(f, "]");
}

static const char *read_words(enum dump_read how)
{
	switch (how) {
	case READ_BLOCKED: return "waiting";
	case READ_STOPPED: return "stopped";
	default: return "running";
	}
}

static void json_thread(FILE *f, const struct dump *d, const struct thread_dump *t)
{
	bool waiting = dump_task_waiting(&t->task);

	fprintf(f, "{\"tid\":%d,\"name\":", (int) t->tid);
	json_write_string(f, t->name);
	fprintf(f, ",\"gil\":%s,\"state\":\"%s\",\"wait\":",
		t->gil < 0 ? "null" : t->gil ? "true" : "false", waiting ? "waiting" : "running");
	if (waiting)
		json_write_string(f, t->wait);
	else
		fprintf(f, "null");
	fprintf(f, ",\"error\":");
	if (t->walk < 0)
		json_write_string(f, walk_words(t->walk));
	else
		fprintf(f, "null");
	fprintf(f, ",\"frames\":[");
	for (size_t k = 0; k < t->n_frames; k++) {
		fprintf(f, "%s{\"function\":", k ? "," : "");
		json_write_string(f, t->frames[k].name);
		fprintf(f, ",\"file\":");
		json_write_string(f, t->frames[k].file);
		fprintf(f, ",\"line\":%d}", t->frames[k].line);
	}
	fprintf(f, "],\"frames_cut\":%" PRIu64 ",\"read\":\"%s\"", t->cut.n, read_words(t->how));
	if (d->o.native)
		json_native(f, d, t);
	fprintf(f, "}");
}

static void write_json(FILE *f, const struct dump *d)
{
	fprintf(f, "{\"pid\":%d,\"command\":", (int) d->o.pid);
	json_write_string(f, d->command);
	fprintf(f, ",\"python\":{\"version\":");
	json_write_string(f, d->info->version);
	fprintf(f, ",\"path\":");
	json_write_string(f, d->info->binary);
	fprintf(f, "},\"stopped\":%s,\"stopped_us\":%.1f,\"read\":{\"waiting\":%zu,"
		"\"stopped\":%zu,\"running\":%zu},\"threads\":[", d->n_stopped ? "true" : "false",
		(double) d->stopped_ns / 1e3, d->n_blocked, d->n_stopped, d->n_running);
	for (size_t i = 0; i < d->n; i++) {
		if (i)
			fputc(',', f);
		json_thread(f, d, &d->t[i]);
	}
	fprintf(f, d->o.subprocesses ? "]}" : "]}\n");
}

/* ---- the command ---- */

static void dump_release(struct dump *d, struct remote_mem *mem, bool mem_open)
{
	for (size_t i = 0; d->t && i < d->n; i++) {
		free(d->t[i].frames);
		free(d->t[i].stack);
	}
	free(d->t);
	symbolizer_free(d->sym);
	pyframes_free(d->pf);
	if (mem_open)
		remote_mem_close(mem);
}

/* Opens the target's interpreter and reads everything: 0, or 1 (said). */
static int dump_target(struct dump *d, struct remote_mem *mem, bool *mem_open)
{
	struct pyframes_info info = { 0 };
	struct pyframes_gil gil = { 0 };
	uint64_t gil_addr = 0;
	uint32_t lo, ho;
	int r;

	if (kill(d->o.pid, 0) < 0 && errno == ESRCH)
		return target_error(d, -ESRCH, &info);
	r = remote_mem_open_pid(d->o.pid, mem);
	if (r < 0)
		return target_error(d, r, &info);
	*mem_open = true;
	r = pyframes_open_settled(d->o.pid, mem, &d->pf, &info);
	if (r < 0)
		return target_error(d, r, &info);
	d->info = pyframes_info(d->pf);
	read_command(d->o.pid, d->command, sizeof(d->command));
	r = list_threads(d);
	if (r < 0)
		return target_error(d, r, &info);
	for (size_t i = 0; i < d->n; i++)
		(void) dump_task_read(d->o.pid, d->t[i].tid, &d->t[i].task);
	if (pyframes_gil_spec(d->pf, &gil_addr, &lo, &ho) < 0)
		gil_addr = 0;
	if (read_all(d, &gil))
		return 1;
	describe(d, &gil, gil_addr);
	return 0;
}

/* One process into f: 0, or 1 when it could not be read (said, unless it is a child: then
 * written as such). */
static int dump_one(const struct dump_opts *o, pid_t pid, bool child, FILE *f, bool first)
{
	struct dump d = { .o = *o, .quiet = child };
	struct remote_mem mem;
	bool mem_open = false;
	int r;

	d.o.pid = pid;
	r = dump_target(&d, &mem, &mem_open);
	if (o->subprocesses && !first)
		fputs(o->json ? "," : "\n", f);
	if (r && child) {
		read_command(pid, d.command, sizeof(d.command));
		if (o->json) {
			fprintf(f, "{\"pid\":%d,\"command\":", (int) pid);
			json_write_string(f, d.command);
			fprintf(f, ",\"error\":");
			json_write_string(f, d.error);
			fprintf(f, "}");
		} else {
			fprintf(f, "Process %d: %s\n(cannot dump it: %s)\n", (int) pid, d.command,
				d.error);
		}
		r = 0;
	} else if (r == 0 && o->json) {
		write_json(f, &d);
	} else if (r == 0) {
		write_text(f, &d);
	}
	dump_release(&d, &mem, mem_open);
	return r;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_opts o;
	struct outfile out;
	pid_t tree[MAX_PROCESSES];
	size_t n = 1;
	int r;

	r = parse_args(argc, argv, &o);
	if (r)
		return r < 0 ? 2 : 0;
	if (cli_output_open(&out, o.output) < 0)
		return 1;
	if (o.subprocesses) {
		n = 1 + procfs_descendants(o.pid, tree + 1, MAX_PROCESSES - 1);
		if (o.json)
			fputs("{\"processes\":[", out.f);
	}
	for (size_t i = 0; i < n; i++)
		if (dump_one(&o, i ? tree[i] : o.pid, i > 0, out.f, i == 0)) {
			outfile_abort(&out);
			return 1;
		}
	if (o.subprocesses && o.json)
		fputs("]}\n", out.f);
	return cli_output_commit(&out) < 0 ? 1 : 0;
}
