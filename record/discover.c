/*
 * discover.c: the monitor's set of processes, one scan of /proc at a time (see discover.h).
 *
 * What is kept between scans, one entry per process seen in the last scan, sorted by pid: the
 * inode of its /proc/PID directory as the listing gives it (d_ino; a pid reused gets a new
 * directory, so a new inode: the entry is then made afresh), whether it is a kernel thread, its
 * start time, and, once its mappings were read, the verdict on them with the exe it was for.
 * Each scan builds the next table from the entries of the processes it lists and drops the rest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/procfs.h"
#include "record/discover.h"

#define PF_KTHREAD_FLAG 0x00200000u     /* PF_KTHREAD of stat's flags (field 9) */
#define STAT_MAX 1024                   /* a stat line is ~300 bytes, its comm 15 at most */
#define MAPS_CHUNK 65536                /* a maps line is at most ~4200 bytes (PATH_MAX) */
#define CACHE_MAX (1u << 22)            /* entries kept at most (pid_max's own bound) */

struct entry {                          /* pid first: cmp_pid() orders entries too */
	pid_t pid;
	bool kthread;
	bool judged;                    /* python holds the mappings' verdict for exe_hash */
	bool python;
	uint64_t ino;                   /* its /proc/PID's inode (0: not listed, pids alone) */
	uint64_t start_time;
	uint64_t exe_hash;
};

struct table {
	struct entry *e;
	size_t n, cap;
};

struct discover {
	pid_t *pids;                    /* sorted, unique */
	size_t n_pids;
	bool has_re, full, all_python;
	regex_t re;
	pid_t self;
	struct table cur, next;         /* the last scan's entries; the one being built */
	char *text;                     /* DISCOVER_CMDLINE_MAX + 1: a command line */
	char *maps;                     /* MAPS_CHUNK + 1: a piece of a maps file */
};

/* What a scan needs of /proc/PID/stat. */
struct pstat {
	char comm[64];
	char state;
	unsigned long flags;
	long threads;
	uint64_t start_time;
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return (x > y) - (x < y);
}

static void set_error(struct discover_error *err, const char *why)
{
	if (err)
		snprintf(err->reason, sizeof(err->reason), "%s", why);
}

int discover_new(const struct discover_opts *o, struct discover **ret,
		 struct discover_error *ret_err)
{
	struct discover *d;
	int r;

	*ret = NULL;
	set_error(ret_err, "");
	if (!o || (!o->n_pids && !o->name_regex && !o->all_python)) {
		set_error(ret_err, "no process criterion (pids, a name or all Python processes)");
		return -EINVAL;
	}
	for (size_t i = 0; i < o->n_pids; i++) {
		if (o->pids[i] <= 0) {
			set_error(ret_err, "a pid is a positive number");
			return -EINVAL;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->self = getpid();
	d->full = o->full;
	d->all_python = o->all_python;
	if (o->name_regex) {
		r = regcomp(&d->re, o->name_regex, REG_EXTENDED | REG_NOSUB);
		if (r) {
			if (ret_err)
				(void) regerror(r, &d->re, ret_err->reason, sizeof(ret_err->reason));
			free(d);
			return r == REG_ESPACE ? -ENOMEM : -EINVAL;
		}
		d->has_re = true;
	}
	d->pids = malloc((o->n_pids ? o->n_pids : 1) * sizeof(*d->pids));
	d->text = malloc(DISCOVER_CMDLINE_MAX + 1);
	d->maps = malloc(MAPS_CHUNK + 1);
	if (!d->pids || !d->text || !d->maps) {
		discover_free(d);
		return -ENOMEM;
	}
	if (o->n_pids)
		memcpy(d->pids, o->pids, o->n_pids * sizeof(*d->pids));
	qsort(d->pids, o->n_pids, sizeof(*d->pids), cmp_pid);
	for (size_t i = 0; i < o->n_pids; i++)
		if (!d->n_pids || d->pids[d->n_pids - 1] != d->pids[i])
			d->pids[d->n_pids++] = d->pids[i];
	*ret = d;
	return 0;
}

void discover_free(struct discover *d)
{
	if (!d)
		return;
	if (d->has_re)
		regfree(&d->re);
	free(d->cur.e);
	free(d->next.e);
	free(d->pids);
	free(d->text);
	free(d->maps);
	free(d);
}

/* ---- bounded reads of /proc/PID files ---------------------------------------------------- */

static int open_proc(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);

	return fd < 0 ? -errno : fd;
}

/* At most size - 1 bytes of path into buf, NUL-terminated: how many, or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	int fd = open_proc(path);

	if (fd < 0)
		return fd;
	while (len < size - 1) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			(void) close(fd);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t) n;
	}
	(void) close(fd);
	buf[len] = '\0';
	return (ssize_t) len;
}

/* "PID (COMM) S PPID PGRP SESSION TTY TPGID FLAGS ... NUM_THREADS(20) ... STARTTIME(22)": the
 * name may hold anything but NUL, ')' and blanks too: the last ')' ends it. */
static int read_stat(pid_t pid, struct pstat *ret)
{
	char path[64], text[STAT_MAX], *open_paren, *close_paren;
	unsigned long long start;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	if (read_small(path, text, sizeof(text)) < 0)
		return -ENOENT;
	open_paren = strchr(text, '(');
	close_paren = strrchr(text, ')');
	if (!open_paren || !close_paren || close_paren < open_paren ||
	    sscanf(close_paren + 1, " %c %*d %*d %*d %*d %*d %lu %*u %*u %*u %*u %*u %*u %*d %*d "
		   "%*d %*d %ld %*d %llu", &ret->state, &ret->flags, &ret->threads, &start) != 4)
		return -EBADMSG;
	len = (size_t) (close_paren - open_paren - 1);
	if (len >= sizeof(ret->comm))
		len = sizeof(ret->comm) - 1;
	memcpy(ret->comm, open_paren + 1, len);
	ret->comm[len] = '\0';
	ret->start_time = start;
	return 0;
}

/* The link of dir/exe as text (nothing followed) into buf, "" where unreadable: 0 or -errno. */
static int read_exe(const char *dir, char *buf, size_t size)
{
	char path[96];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/exe", dir);
	n = readlink(path, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? 0 : n == 0 ? -ENOENT : -errno;
}

/* What the regex is matched against: the name, or (full) the command line, NULs as spaces. */
static const char *match_text(struct discover *d, pid_t pid, const char *comm)
{
	char path[64];
	ssize_t n;

	if (!d->full)
		return comm;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
	n = read_small(path, d->text, DISCOVER_CMDLINE_MAX + 1);
	while (n > 0 && d->text[n - 1] == '\0')
		n--;
	if (n <= 0)
		return comm;            /* no command line (pgrep -f): its name */
	for (ssize_t i = 0; i < n; i++)
		if (d->text[i] == '\0')
			d->text[i] = ' ';
	d->text[n] = '\0';
	return d->text;
}

/* Whether a file's path (from its first '/' to the end of line) is CPython's: libpython3, or a
 * basename that starts with "python". */
static bool python_path(const char *line, size_t len)
{
	const char *path = memchr(line, '/', len), *base;
	size_t plen;

	if (!path)
		return false;
	plen = len - (size_t) (path - line);
	for (size_t i = 0; i + 10 <= plen; i++)
		if (!memcmp(path + i, "libpython3", 10))
			return true;
	base = path;
	for (size_t i = 0; i < plen; i++)
		if (path[i] == '/')
			base = path + i + 1;
	return plen - (size_t) (base - path) >= 6 && !memcmp(base, "python", 6);
}

/* Whether dir/maps holds a CPython file (python_path()), reading at most DISCOVER_MAPS_MAX
 * bytes, a line at a time (a line longer than MAPS_CHUNK is skipped). */
static bool maps_python(struct discover *d, const char *dir)
{
	char path[96];
	size_t have = 0, total = 0;
	bool found = false, skipping = false;
	int fd;

	snprintf(path, sizeof(path), "%s/maps", dir);
	fd = open_proc(path);
	if (fd < 0)
		return false;
	while (!found && total < DISCOVER_MAPS_MAX) {
		ssize_t n = read(fd, d->maps + have, MAPS_CHUNK - have);
		char *p = d->maps, *end, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += (size_t) n;
		end = d->maps + have + n;
		while (!found && (nl = memchr(p, '\n', (size_t) (end - p)))) {
			found = !skipping && python_path(p, (size_t) (nl - p));
			skipping = false;
			p = nl + 1;
		}
		have = (size_t) (end - p);
		if (have == MAPS_CHUNK) {       /* one line fills the buffer: skip to its end */
			have = 0;
			skipping = true;
		}
		memmove(d->maps, p, have);
	}
	(void) close(fd);
	return found;
}

/* Whether the process (its entry e, its /proc directory dir, its exe) runs CPython: by its exe's
 * name, else by its mappings, read once per (start_time, exe). */
static bool is_python(struct discover *d, struct entry *e, const char *dir, const char *exe)
{
	const char *base = strrchr(exe, '/');
	uint64_t h;

	base = base ? base + 1 : exe;
	if (!strncmp(base, "python", 6))
		return true;
	h = hash_bytes(exe, strlen(exe), e->start_time);
	if (!e->judged || e->exe_hash != h) {
		e->python = maps_python(d, dir);
		e->exe_hash = h;
		e->judged = true;
	}
	return e->python;
}

/* ---- the scan ------------------------------------------------------------------------------ */

/* The last scan's entry of pid, or NULL. */
static struct entry *cached(struct discover *d, pid_t pid)
{
	struct entry key = { .pid = pid };

	return d->cur.n ? bsearch(&key, d->cur.e, d->cur.n, sizeof(key), cmp_pid) : NULL;
}

/* A place for an entry in the table being built: there, or scratch where the table holds
 * CACHE_MAX already (that process is then not kept); NULL: no memory. */
static struct entry *keep(struct discover *d, struct entry *scratch)
{
	struct table *t = &d->next;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct entry *e;

		if (cap > CACHE_MAX)
			return scratch;
		e = realloc(t->e, cap * sizeof(*e));
		if (!e)
			return NULL;
		t->e = e;
		t->cap = cap;
	}
	return &t->e[t->n++];
}

/* Adds a match to ret[0 .. *n) (max: the lowest pids kept). */
static void add_match(struct discovered *ret, size_t max, size_t *n, const struct discovered *m)
{
	size_t at = *n, hi = 0;

	if (*n == max) {
		if (!max)
			return;
		for (size_t i = 1; i < max; i++)
			if (ret[i].pid > ret[hi].pid)
				hi = i;
		if (ret[hi].pid < m->pid)
			return;
		at = hi;
	} else {
		(*n)++;
	}
	ret[at] = *m;
}

/* Whether an entry matches by the criteria; exe (dir's, read here) when all_python read it.
 * A process whose exe has no link (ENOENT: its main thread has exited, others run on) is
 * looked at through a live thread: dir (64 bytes) becomes that thread's. */
static bool matches(struct discover *d, struct entry *e, const struct pstat *st, bool fresh,
		    char *dir, char *exe, size_t exe_size)
{
	char comm[64];

	if (d->n_pids && bsearch(&e->pid, d->pids, d->n_pids, sizeof(pid_t), cmp_pid))
		return true;
	if (d->has_re) {
		const char *text;

		if (fresh) {
			snprintf(comm, sizeof(comm), "%s", st->comm);
		} else if (procfs_comm(e->pid, comm, sizeof(comm)) < 0) {
			return false;
		}
		text = match_text(d, e->pid, comm);
		if (!regexec(&d->re, text, 0, NULL, 0))
			return true;
	}
	if (d->all_python) {
		if (read_exe(dir, exe, exe_size) == -ENOENT && procfs_mem_dir(e->pid, dir, 64) == 0)
			(void) read_exe(dir, exe, exe_size);
		return exe[0] && is_python(d, e, dir, exe);
	}
	return false;
}

/* Looks at process pid (ino: its /proc/PID inode, 0 unknown) and adds it to ret where it
 * matches. -ENOMEM, else 0. */
static int consider(struct discover *d, pid_t pid, uint64_t ino, struct discovered *ret,
		    size_t max, size_t *n)
{
	struct entry *old = cached(d, pid), *e, scratch;
	struct discovered m = { .pid = pid };
	struct pstat st = { .state = 0 };
	bool fresh = false;
	char dir[64];

	if (pid == d->self)
		return 0;
	if (!old || !ino || old->ino != ino) {
		if (read_stat(pid, &st) < 0)
			return 0;       /* gone meanwhile */
		fresh = true;
	}
	e = keep(d, &scratch);
	if (!e)
		return -ENOMEM;
	if (fresh)
		*e = (struct entry) { .pid = pid, .ino = ino, .start_time = st.start_time,
				      .kthread = st.flags & PF_KTHREAD_FLAG };
	else
		*e = *old;
	if (e->kthread)
		return 0;
	snprintf(dir, sizeof(dir), "/proc/%d", (int) pid);
	if (!matches(d, e, &st, fresh, dir, m.exe, sizeof(m.exe)))
		return 0;
	/* a match: its state and identity now */
	if (!fresh && read_stat(pid, &st) < 0)
		return 0;
	if (st.flags & PF_KTHREAD_FLAG || st.state == 'X' || (st.state == 'Z' && st.threads <= 1))
		return 0;
	if (st.start_time != e->start_time) {   /* another process since the entry was made */
		e->start_time = st.start_time;
		e->judged = false;
		if (!matches(d, e, &st, true, dir, m.exe, sizeof(m.exe)))
			return 0;
	}
	/* main thread gone, others running: exe through a live thread */
	if (st.state == 'Z' && procfs_mem_dir(pid, dir, sizeof(dir)) < 0)
		return 0;
	if (!m.exe[0] || st.state == 'Z')
		(void) read_exe(dir, m.exe, sizeof(m.exe));
	m.start_time = st.start_time;
	snprintf(m.comm, sizeof(m.comm), "%s", st.comm);
	add_match(ret, max, n, &m);
	return 0;
}

static int cmp_discovered(const void *a, const void *b)
{
	return cmp_pid(&((const struct discovered *) a)->pid, &((const struct discovered *) b)->pid);
}

/* The pids of /proc's listing, each considered. */
static int scan_proc(struct discover *d, struct discovered *ret, size_t max, size_t *n)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	int r = 0;

	if (!dir)
		return -errno;
	while (r == 0 && (errno = 0, de = readdir(dir))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (end == de->d_name || *end || pid <= 0 || pid >= (1L << 30))
			continue;
		r = consider(d, (pid_t) pid, (uint64_t) de->d_ino, ret, max, n);
	}
	if (r == 0 && errno)
		r = -errno;
	(void) closedir(dir);
	return r;
}

int discover_scan(struct discover *d, struct discovered *ret, size_t max, size_t *ret_n)
{
	struct table t;
	size_t n = 0;
	bool sorted = true;
	int r = 0;

	*ret_n = 0;
	if (max > INT32_MAX)
		max = INT32_MAX;
	d->next.n = 0;
	if (!d->has_re && !d->all_python) {
		/* pids alone: those, not /proc's listing (a thread's id is no process) */
		for (size_t i = 0; i < d->n_pids && r == 0; i++) {
			long tgid;

			if (procfs_status_long(d->pids[i], 0, "Tgid", &tgid) == 0 &&
			    tgid == d->pids[i])
				r = consider(d, d->pids[i], 0, ret, max, &n);
		}
	} else {
		r = scan_proc(d, ret, max, &n);
	}
	if (r < 0)
		return r;
	for (size_t i = 1; i < d->next.n; i++)
		sorted = sorted && d->next.e[i - 1].pid < d->next.e[i].pid;
	if (!sorted)
		qsort(d->next.e, d->next.n, sizeof(*d->next.e), cmp_pid);
	t = d->cur;             /* the last scan's table becomes the next one's space */
	d->cur = d->next;
	d->next = t;
	qsort(ret, n, sizeof(*ret), cmp_discovered);
	*ret_n = n;
	return (int) n;
}
