/*
 * wait: why a thread was switched out (--off-cpu), from what the kernel says at the switch: the
 * system call it sleeps in (the outermost __x64_sys_* frame of its kernel stack; with the
 * capture, the number in the registers it entered the kernel with, which the capture program
 * reads: capture_wait()), a page fault on the way (its handler's frames; from those registers,
 * one its own code took), the syscall's first argument (a read's fd, a select's nfds,
 * a futex's address) and, for a futex, whether the interpreter's GIL is what it waits for: its
 * address inside the GIL's state (its mutex, its condition variables), or, where that is not
 * known, with --native (a user stack copied), take_gil or a call that attaches a thread state
 * among the first native frames of its unwound stack (the interpreter's symbols needed). No
 * stack is copied at a switch otherwise: 8 KiB a switch cost a switch-heavy target 20% of its
 * rate more (bench/offcpu.py). The
 * words are those `hwspy dump` uses: `read fd 5 (pipe)`, `recv socket`, `poll/epoll/select`,
 * `futex (lock)`, `GIL`, `sleep`, `page fault (I/O)`; an involuntary switch is [preempted]
 * (offcpu.c), not a wait. wait_label_proc() gives the same words as a label of few values for
 * the monitor's metrics (waitsample.c): `read (pipe)`, not `read fd 5 (pipe)`.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdname.h"
#include "base/hash.h"
#include "record/internal.h"

#define WAIT_NATIVE_LOOK 16     /* innermost native frames looked at for the GIL */

/* Kernel functions of the page-fault path: the thread waits for a page (I/O, swap); the last
 * ones its entry code (5.8+, and before: capture_wait()'s) */
static const char *const fault_fns[] = {
	"handle_mm_fault", "do_user_addr_fault", "exc_page_fault", "filemap_fault",
	"__do_fault", "do_swap_page", "asm_exc_page_fault", "page_fault", "async_page_fault",
};

/* Interpreter functions that wait for the GIL (3.8-3.14), innermost first in the unwound stack
 * before any other interpreter function: take_gil itself, or its callers where it is inlined */
static const char *const gil_fns[] = {
	"take_gil", "PyEval_RestoreThread", "PyEval_AcquireThread", "PyEval_AcquireLock",
	"_PyThreadState_Attach", "_PyEval_AcquireLock", "PyEval_RestoreThread.cold",
};

struct syscall_words {
	const char *name;       /* the syscall, as in __x64_sys_NAME (syscall_names.c's) */
	const char *words;      /* NULL: by its fd (read/write); its name where no words */
};

static const struct syscall_words syscalls[] = {
	{ "read", NULL }, { "pread64", NULL }, { "readv", NULL },
	{ "preadv", NULL }, { "preadv2", NULL }, { "write", NULL },
	{ "pwrite64", NULL }, { "writev", NULL }, { "pwritev", NULL },
	{ "pwritev2", NULL },
	{ "recvfrom", "recv socket" }, { "recvmsg", "recv socket" },
	{ "recvmmsg", "recv socket" }, { "sendto", "send socket" },
	{ "sendmsg", "send socket" }, { "sendmmsg", "send socket" },
	{ "accept", "accept socket" }, { "accept4", "accept socket" },
	{ "connect", "connect socket" },
	{ "futex", "futex (lock)" }, { "futex_waitv", "futex (lock)" },
	{ "futex_wait", "futex (lock)" },
	{ "clock_nanosleep", "sleep" }, { "nanosleep", "sleep" },
	{ "poll", "poll/epoll/select" }, { "ppoll", "poll/epoll/select" },
	{ "epoll_wait", "poll/epoll/select" }, { "epoll_pwait", "poll/epoll/select" },
	{ "epoll_pwait2", "poll/epoll/select" }, { "select", "poll/epoll/select" },
	{ "pselect6", "poll/epoll/select" }, { "wait4", "wait child" },
	{ "waitid", "wait child" },
	/* every other syscall by its name (syscall_names.c) */
};

/* Whether a syscall of the table is waited on by its fd (read, write and theirs). */
static bool by_fd(const struct syscall_words *w)
{
	return !w->words && (strstr(w->name, "read") || strstr(w->name, "write"));
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, list[i]))
			return true;
	return false;
}

/* The syscall a kernel function enters (__x64_sys_read -> "read"), or NULL. */
static const char *syscall_of(const char *fn)
{
	static const char *const prefixes[] = { "__x64_sys_", "__ia32_sys_", "__se_sys_",
						"__do_sys_", "ksys_" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);

		if (!strncmp(fn, prefixes[i], n) && fn[n])
			return fn + n;
	}
	return NULL;
}

/* What fd is in the target (base/fdname.h), for a frame: no ';' (folded), brackets nor control
 * characters. Kept by process and fd with the time of its read (see wait_words()): a
 * switch-heavy target waits on the same fds again and again. A socket's words take a search
 * of the target's /proc/PID/net tables: they are kept by its link ("socket:[INODE]") too. */
static void fd_words(struct wait_fd_cache *cache, pid_t pid, long fd, uint64_t since_ns,
		     char *buf, size_t len)
{
	char path[64], link[PATH_MAX + 1];
	uint64_t read_ns;
	ssize_t n = -1;
	size_t k, at = 0;

	if (cache && fd >= 0 && fd <= INT32_MAX) {
		at = ((uint32_t) pid * 2654435761u ^ (uint32_t) fd * 40503u) % WAIT_FD_CACHE;
		if (cache->fds[at].read_ns && cache->fds[at].read_ns >= since_ns &&
		    cache->fds[at].pid == pid && cache->fds[at].fd == (int32_t) fd) {
			snprintf(buf, len, "%s", cache->fds[at].words);
			return;
		}
	}
	read_ns = clock_now_ns();               /* before the read: what it reads is as late */
	if (fd >= 0 && fd <= INT32_MAX) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%ld", (int) pid, fd);
		n = readlink(path, link, sizeof(link) - 1);
	}
	if (n <= 0) {
		snprintf(buf, len, "?");
	} else if (cache && n < 64 && !strncmp(link, "socket:", 7)) {
		size_t s = hash_bytes(link, (size_t) n, 0) % WAIT_FD_CACHE;

		link[n] = '\0';
		if (strcmp(cache->sockets[s].link, link)) {
			fdname_link(pid, link, (size_t) n, buf, len);
			memcpy(cache->sockets[s].link, link, (size_t) n + 1);      /* n < 64 */
			snprintf(cache->sockets[s].words, sizeof(cache->sockets[s].words), "%.*s",
				 (int) (sizeof(cache->sockets[s].words) - 1), buf);
		}
		snprintf(buf, len, "%s", cache->sockets[s].words);
	} else {
		fdname_link(pid, link, (size_t) n, buf, len);
	}
	for (k = 0; buf[k]; k++) {
		unsigned char ch = (unsigned char) buf[k];

		if (ch == ';' || ch < 0x20 || ch == '[' || ch == ']')
			buf[k] = '_';
	}
	if (cache && fd >= 0 && fd <= INT32_MAX && k < sizeof(cache->fds[at].words)) {
		cache->fds[at].read_ns = read_ns;
		cache->fds[at].pid = pid;
		cache->fds[at].fd = (int32_t) fd;
		memcpy(cache->fds[at].words, buf, k + 1);
	}
}

/* Whether the thread waits for the GIL: the first interpreter function in its user stack
 * (unwound from the sample's copy) is one that takes it. */
static bool waits_for_gil(struct recorder *rec, const struct sample *s)
{
	size_t nips = 0;

	if (!rec->sym || !s->regs || !s->stack ||
	    symbolizer_unwind(rec->sym, s->regs, s->n_regs, s->stack, s->stack_size, rec->ips,
			      WAIT_NATIVE_LOOK, &nips) < 0)
		return false;
	for (size_t i = 0; i < nips; i++) {
		struct native_frame nf[4];
		size_t k = 0;

		if (symbolizer_lookup(rec->sym, rec->ips[i], i > 0, nf, 4, &k) < 0)
			continue;
		for (size_t j = 0; j < k; j++) {
			const char *name = nf[j].name;

			if (!name)
				continue;
			if (in_list(name, gil_fns, sizeof(gil_fns) / sizeof(gil_fns[0])))
				return true;
			/* a lock of threading's, or any other wait of the interpreter's */
			if (!strncmp(name, "PyThread_", 9) || !strncmp(name, "_PyMutex", 8) ||
			    !strncmp(name, "_PyEval_EvalFrame", 17))
				return false;
		}
	}
	return false;
}

/* The table's line for sys, or NULL. */
static const struct syscall_words *syscall_find(const char *sys)
{
	for (size_t i = 0; sys && i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
		if (!strcmp(sys, syscalls[i].name))
			return &syscalls[i];
	return NULL;
}

bool wait_restarts(pid_t pid, const struct procfs_syscall *sc)
{
	char path[64];
	struct stat st;

	switch (sc->nr) {
	case 202:                       /* futex: restarted, a timeout's deadline kept */
	case 35: case 230:              /* nanosleep clock_nanosleep: what is left of it */
	case 7: case 271:               /* poll ppoll: what is left of the timeout */
	case 23: case 270:              /* select pselect6: the timeout updated */
	case 61: case 247:              /* wait4 waitid */
	case 34: case 130:              /* pause rt_sigsuspend */
		return true;
	case 0: case 1: case 17: case 18: case 19: case 20:     /* read write (pread, readv ...) */
		/* on a pipe or a file; a socket's with a timeout fails with EINTR */
		if (sc->args[0] > INT32_MAX)
			return false;
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) pid, (int) sc->args[0]);
		return stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode));
	default:
		return false;
	}
}

bool wait_in_gil(uint64_t futex, uint64_t gil)
{
	return gil && futex >= gil && futex - gil < PYFRAMES_GIL_STATE_SIZE;
}

/* The words of a wait in sys (w: its line of the table, or NULL) that is not one by its fd. */
static const char *words_of(const struct syscall_words *w, const char *sys, long arg, uint64_t gil)
{
	if (!w || !w->words)
		return sys;
	if (!strcmp(sys, "futex") && wait_in_gil((uint64_t) arg, gil))
		return "GIL";
	if ((!strcmp(sys, "select") || !strcmp(sys, "pselect6")) && arg == 0)
		return "sleep";         /* time.sleep() before 3.11: no fds */
	return w->words;
}

void wait_words(pid_t pid, const char *sys, long arg, uint64_t gil, struct wait_fd_cache *cache,
		uint64_t since_ns, char *buf, size_t len)
{
	const struct syscall_words *w = syscall_find(sys);
	char what[160];

	if (!sys) {
		snprintf(buf, len, "unknown");
	} else if (w && by_fd(w)) {
		fd_words(cache, pid, arg, since_ns, what, sizeof(what));
		snprintf(buf, len, "%s fd %ld (%s)", strstr(sys, "write") ? "write" : "read", arg,
			 what);
	} else {
		snprintf(buf, len, "%s", words_of(w, sys, arg, gil));
	}
}

/* A wait that is no system call's, as /proc tells it: a job-control stop, a fault, a
 * preemption. True when said into buf. */
static bool state_words(char state, const struct procfs_syscall *sc, char *buf, size_t len)
{
	if (state == 'T' || state == 't')
		snprintf(buf, len, "stopped");
	else if (sc->nr == -1)
		snprintf(buf, len, state == 'D' ? "page fault (I/O)" : "preempted");
	else
		return false;
	return true;
}

void wait_words_proc(pid_t pid, char state, const struct procfs_syscall *sc, uint64_t gil,
		     struct wait_fd_cache *cache, uint64_t since_ns, char *buf, size_t len)
{
	const char *sys;
	char name[32];

	if (state_words(state, sc, buf, len))
		return;
	if (sc->nr < 0) {
		snprintf(buf, len, "unknown");
		return;
	}
	sys = wait_syscall_name(sc->nr);
	if (!sys) {
		snprintf(name, sizeof(name), "syscall %ld", sc->nr);
		sys = name;
	}
	wait_words(pid, sys, (long) sc->args[0], gil, cache, since_ns, buf, len);
}

/* What fd of process pid is, in one word of a small set (the link's kind, never its path nor
 * its number): "pipe", "socket", "file", "tty", "device", "eventfd", "timerfd", "signalfd",
 * "epoll", "inotify", "anon inode", "other", "?" (gone, or not allowed to look). */
static const char *fd_kind(pid_t pid, long fd)
{
	static const struct { const char *prefix, *kind; } kinds[] = {
		{ "pipe:[", "pipe" }, { "socket:[", "socket" },
		{ "anon_inode:[eventfd]", "eventfd" }, { "anon_inode:[timerfd]", "timerfd" },
		{ "anon_inode:[signalfd]", "signalfd" }, { "anon_inode:[eventpoll]", "epoll" },
		{ "anon_inode:inotify", "inotify" }, { "anon_inode:", "anon inode" },
		{ "/dev/pts/", "tty" }, { "/dev/tty", "tty" }, { "/dev/", "device" }, { "/", "file" },
	};
	char path[64], link[64];
	ssize_t n;

	if (fd < 0 || fd > INT32_MAX)
		return "?";
	snprintf(path, sizeof(path), "/proc/%d/fd/%ld", (int) pid, fd);
	n = readlink(path, link, sizeof(link) - 1);     /* the link's text: nothing followed */
	if (n <= 0)
		return "?";
	link[n] = '\0';
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(link, kinds[i].prefix, strlen(kinds[i].prefix)))
			return kinds[i].kind;
	return "other";
}

void wait_label_proc(pid_t pid, char state, const struct procfs_syscall *sc, uint64_t gil,
		     char *buf, size_t len)
{
	const struct syscall_words *w;
	const char *sys;

	if (state_words(state, sc, buf, len))
		return;
	sys = sc->nr >= 0 ? wait_syscall_name(sc->nr) : NULL;
	if (!sys) {
		if (sc->nr >= 0 && sc->nr < WAIT_LABEL_SYSCALLS)
			snprintf(buf, len, "syscall %ld", sc->nr);
		else
			snprintf(buf, len, "unknown");
		return;
	}
	w = syscall_find(sys);
	if (w && by_fd(w))
		snprintf(buf, len, "%s (%s)", strstr(sys, "write") ? "write" : "read",
			 fd_kind(pid, (long) sc->args[0]));
	else
		snprintf(buf, len, "%s", words_of(w, sys, (long) sc->args[0], gil));
}

/* What kernel address ip says of a wait (rec->sym set): whether it lies in a page fault's
 * path (*ret_fault), the syscall it enters (NULL: none), false where it lies in no function.
 * Kept by address, as a switch-heavy target's switches go through the same few (kallsyms is
 * loaded once a run). */
static bool kernel_ip(struct recorder *rec, uint64_t ip, bool *ret_fault, const char **ret_sys)
{
	struct wait_kernel_ip *k = &rec->kernel_ips[(ip ^ ip >> 12) % RECORD_KERNEL_IPS];
	struct native_frame nf;

	if (k->sym != rec->sym || k->ip != ip) {
		if (symbolizer_kernel(rec->sym, ip, &nf) < 0 || !nf.name) {
			*k = (struct wait_kernel_ip) { .ip = ip, .sym = rec->sym };
		} else {
			*ret_sys = syscall_of(nf.name);
			*ret_fault = in_list(nf.name, fault_fns,
					     sizeof(fault_fns) / sizeof(fault_fns[0]));
			if (*ret_sys && strlen(*ret_sys) >= sizeof(k->sys))
				return true;    /* no syscall's name is that long: not kept */
			*k = (struct wait_kernel_ip) { .ip = ip, .sym = rec->sym, .named = true,
						       .fault = *ret_fault };
			snprintf(k->sys, sizeof(k->sys), "%s", *ret_sys ? *ret_sys : "");
		}
	}
	*ret_fault = k->fault;
	*ret_sys = k->sys[0] ? k->sys : NULL;
	return k->named;
}

/* Where the capture program found the thread (sample_capture.wait), for a sample with no
 * callchain (not asked: a kernel sample's has its context at least): its system call by
 * number and first argument, a fault (the entry code it came in by a page fault's), the
 * kernel, or nowhere (*ret_unknown: the registers not found, or no record for the sample).
 * False where the sample has the callchain. */
static bool capture_wait(struct recorder *rec, const struct sample *s, char *sys_name,
			 size_t len, const char **ret_sys, bool *ret_fault, bool *ret_unknown,
			 long *ret_arg)
{
	const struct sample_capture *c = s->capture;
	const char *name = NULL;
	bool fault = false;

	if (s->n_callchain)
		return false;
	*ret_unknown = !c || c->wait == SAMPLE_WAIT_NONE || c->wait == SAMPLE_WAIT_UNKNOWN;
	if (*ret_unknown)
		return true;
	if (c->wait == SAMPLE_WAIT_KERNEL && c->wait_entry && rec->sym)
		(void) kernel_ip(rec, c->wait_entry, &fault, &name);
	*ret_fault = c->wait == SAMPLE_WAIT_FAULT || fault;
	if (c->wait != SAMPLE_WAIT_SYSCALL)
		return true;
	name = wait_syscall_name(c->wait_nr);
	if (name)
		snprintf(sys_name, len, "%s", name);
	else
		snprintf(sys_name, len, "syscall %ld", c->wait_nr);
	*ret_sys = sys_name;
	*ret_arg = (long) c->wait_arg;
	return true;
}

void record_wait_reason(struct recorder *rec, const struct sample *s, char *buf, size_t len)
{
	const char *sys = NULL;
	bool fault = false, kernel = false, unknown = !rec->sym;
	long arg = -1;
	char words[192], sys_name[512];
	/* the registers come in the order of their bits in the mask asked for (recorder.c) */
	size_t arg_at = (size_t) __builtin_popcountll(RECORD_OFF_CPU_REGS &
						      ((1ull << SAMPLER_OFF_CPU_ARG_REG) - 1));

	if (capture_wait(rec, s, sys_name, sizeof(sys_name), &sys, &fault, &unknown, &arg)) {
		arg_at = SIZE_MAX;      /* (and no callchain) */
		rec->stats.off_cpu_regs++;
		rec->stats.off_cpu_regs_unknown += unknown;
	}
	for (size_t i = 0; i < s->n_callchain; i++) {
		const char *ip_sys = NULL;
		bool ip_fault = false;
		uint64_t ip = s->callchain[i];

		if (ip >= (uint64_t) PERF_CONTEXT_MAX) {
			kernel = ip == (uint64_t) PERF_CONTEXT_KERNEL;
			continue;
		}
		if (!kernel || !rec->sym || !kernel_ip(rec, ip, &ip_fault, &ip_sys))
			continue;
		fault |= ip_fault;
		if (ip_sys) {                   /* the outermost one: the syscall itself */
			snprintf(sys_name, sizeof(sys_name), "%s", ip_sys);
			sys = sys_name;         /* (ip_sys's slot may be another's by then) */
		}
	}
	if (s->regs && s->n_regs > arg_at)
		arg = (long) s->regs[arg_at];
	if (fault) {
		snprintf(buf, len, "[wait: page fault (I/O)]");
		return;
	}
	if (!sys) {
		snprintf(buf, len, "[wait: %s]", unknown ? "unknown" : "kernel");
		return;
	}
	/* the sample's process: the target's, or a child's (--subprocesses) */
	wait_words(s->pid, sys, arg, record_gil_addr(rec, s->pid), &rec->fd_cache, s->time_ns,
		   words, sizeof(words));
	/* a futex not known to be the GIL's: with --native, the unwound stack may tell */
	if ((!strcmp(sys, "futex") || !strcmp(sys, "futex_waitv")) && strcmp(words, "GIL") &&
	    waits_for_gil(rec, s))
		snprintf(words, sizeof(words), "GIL");
	snprintf(buf, len, "[wait: %s]", words);
}
