/*
 * monitor.c: hwspy monitor's engine, include/hwspy.h's monitor section (lib/monitor.h). The
 * options, then the loop on the caller's thread: a scan of /proc each second (processes
 * picked up and dropped), a tick for the waits, each watch's rotation when its interval is
 * due, and the listener, served between them (one scrape at a time, each bounded in time).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/http.h"
#include "lib/internal.h"
#include "lib/monitor.h"
#include "output/metrics.h"
#include "output/profdir.h"
#include "record/discover.h"

#define SCAN_EVERY_NS 1000000000ULL
#define TICK_NS 1000000000ULL           /* the waits sampled once a second */
#define TRIM_EVERY_NS 10000000000ULL   /* the recorders' arenas given back (below) */
#define POLL_MS 200                     /* *stop seen at least this often */
#define SERVE_TIMEOUT_MS 2000           /* a scrape's connection, at most */
#define SERVE_MAX 8                     /* connections served per wake */
#define DEFAULT_FREQ 10
#define DEFAULT_EVERY 60.0
#define MAX_TOP 16

uint64_t mon_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

uint64_t mon_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

void mon_note(struct hwspy_monitor *m, enum hwspy_monitor_note note, pid_t pid, int err,
	      const char *detail)
{
	if (m->o.note_fn)
		m->o.note_fn(m->o.note_ctx, note, pid, err, detail ? detail : "");
}

/* hwspy's own labels, which --label may not take */
static const char *const own_labels[] = {
	"pid", "process", "event", "reason", "function", "file", "finding", "metric", "python",
	"mode", "error", "version", "hostname", "hwspy_version",
};

static bool label_key_ok(const char *k, size_t n)
{
	if (n == 0 || (k[0] >= '0' && k[0] <= '9') || (n >= 2 && k[0] == '_' && k[1] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return false;
	return true;
}

/* --label KEY=VALUE ...: into m->labels (key, value, ..., NULL). */
static int labels_parse(struct hwspy_monitor *m)
{
	if (m->o.n_labels > MONITOR_MAX_LABELS)
		return lib_fail(-EINVAL, "at most %d labels", MONITOR_MAX_LABELS);
	for (size_t i = 0; i < m->o.n_labels; i++) {
		const char *l = m->o.labels[i], *eq = strchr(l, '=');
		size_t n = eq ? (size_t) (eq - l) : strlen(l);

		if (!eq || !label_key_ok(l, n))
			return lib_fail(-EINVAL, "label '%s' is not KEY=VALUE with a Prometheus label "
					"name as KEY ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)", l);
		for (size_t k = 0; k < sizeof(own_labels) / sizeof(own_labels[0]); k++)
			if (strlen(own_labels[k]) == n && !strncmp(own_labels[k], l, n))
				return lib_fail(-EINVAL, "label '%.*s' is one hwspy sets itself; "
						"choose another name", (int) n, l);
		for (size_t k = 0; k < m->n_labels; k++)
			if (strlen(m->labels[2 * k]) == n && !strncmp(m->labels[2 * k], l, n))
				return lib_fail(-EINVAL, "label '%.*s' given twice", (int) n, l);
		m->labels[2 * m->n_labels] = strndup(l, n);
		m->labels[2 * m->n_labels + 1] = strdup(eq + 1);
		if (!m->labels[2 * m->n_labels] || !m->labels[2 * m->n_labels + 1])
			return lib_fail(-ENOMEM, "out of memory");
		if (!strcmp(m->labels[2 * m->n_labels], "service"))
			m->service = m->labels[2 * m->n_labels + 1];
		m->n_labels++;
	}
	return 0;
}

static int open_dir(struct hwspy_monitor *m)
{
	const char *why = NULL;
	struct profdir *d;
	int r = profdir_open(m->o.profiles, &d, &why);

	if (r == -EPERM || r == -ELOOP || r == -ENOTDIR)
		return lib_fail(r, "cannot write profiles into '%s': it %s", m->o.profiles, why);
	if (r < 0)
		return lib_fail_errno(r, "cannot write profiles into '%s': it %s", m->o.profiles,
				      why ? why : "cannot be used");
	profdir_close(m->dir);
	m->dir = d;
	return 0;
}

static int monitor_setup(struct hwspy_monitor *m)
{
	struct discover_opts d = {
		.pids = m->o.pids, .n_pids = m->o.n_pids, .name_regex = m->o.name,
		.full = m->o.full, .all_python = m->o.all_python,
	};
	struct discover_error err = { "" };
	int r;

	if (!m->o.n_pids && !m->o.name && !m->o.all_python)
		return lib_fail(-EINVAL, "nothing to watch: give -p PID, --name REGEX or "
				"--all-python");
	r = labels_parse(m);
	if (r < 0)
		return r;
	/* -p alone, and none of them lives: a mistyped pid, said rather than waited on */
	for (size_t i = 0; !m->o.name && !m->o.all_python && i < m->o.n_pids; i++) {
		if (kill(m->o.pids[i], 0) == 0 || errno != ESRCH)
			break;
		if (i + 1 == m->o.n_pids)
			return lib_fail(-ESRCH, m->o.n_pids == 1 ? "no process with pid %d" :
					"none of the pids given lives (%d ...)", (int) m->o.pids[0]);
	}
	r = hwspy_events_new(&m->sample_events);
	if (r == 0)
		r = hwspy_events_add_list(m->sample_events, m->o.sample ? m->o.sample : "cpu-clock");
	if (r < 0)
		return r == -ENOMEM ? lib_fail(r, "out of memory") : r;      /* the event said */
	r = discover_new(&d, &m->discover, &err);
	if (r < 0)
		return r == -EINVAL ? lib_fail(r, "--name '%s' is no regular expression: %s",
					       m->o.name ? m->o.name : "", err.reason)
				    : lib_fail(r, "out of memory");
	if (m->o.listen) {
		r = http_listen(m->o.listen, &m->listen_fd);
		if (r < 0)
			return r == -EINVAL ? lib_fail(r, "'%s' is no address to listen on: give "
						       "HOST:PORT (127.0.0.1:9464, [::1]:9464)",
						       m->o.listen)
					    : lib_fail_errno(r, "cannot listen on %s", m->o.listen);
		m->port = http_bound_port(m->listen_fd);
		m->loopback = http_bound_loopback(m->listen_fd);
	}
	if (m->o.profiles) {
		m->dir_path = strdup(m->o.profiles);
		if (!m->dir_path)
			return lib_fail(-ENOMEM, "out of memory");
		r = open_dir(m);
		if (r < 0)
			return r;
	}
	if (gethostname(m->hostname, sizeof(m->hostname) - 1) < 0)
		snprintf(m->hostname, sizeof(m->hostname), "unknown");
	return 0;
}

int hwspy_monitor_new(const struct hwspy_monitor_opts *o, struct hwspy_monitor **ret)
{
	struct hwspy_monitor *m = calloc(1, sizeof(*m));
	int r;

	lib_reason_clear();
	*ret = NULL;
	if (!m)
		return lib_fail(-ENOMEM, "out of memory");
	m->o = *o;
	m->listen_fd = -1;
	if (!m->o.freq)
		m->o.freq = DEFAULT_FREQ;
	if (!(m->o.every > 0))
		m->o.every = DEFAULT_EVERY;
	if (m->o.top_functions > MAX_TOP)
		m->o.top_functions = MAX_TOP;
	m->started_ns = mon_now_ns();
	m->found = calloc(MONITOR_MAX_WATCHES, sizeof(*m->found));
	r = m->found ? monitor_setup(m) : lib_fail(-ENOMEM, "out of memory");
	if (r < 0) {
		hwspy_monitor_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

int hwspy_monitor_port(const struct hwspy_monitor *m)
{
	return m->port;
}

size_t hwspy_monitor_watched(const struct hwspy_monitor *m)
{
	return m->n;
}

static void drop(struct hwspy_monitor *m, size_t i, bool gone)
{
	struct watch *w = m->w[i];

	if (gone)
		mon_note(m, HWSPY_MONITOR_GONE, w->pid, 0, w->process);
	watch_free(w, true);
	m->w[i] = m->w[--m->n];
}

/* The processes that match now: new ones watched, gone ones dropped; an unreadable one is
 * dropped after an interval, to be tried afresh. */
static void scan(struct hwspy_monitor *m, uint64_t now)
{
	struct discovered *found = m->found;
	bool dropped = false;
	size_t n = 0;

	if (discover_scan(m->discover, found, MONITOR_MAX_WATCHES, &n) < 0)
		return;
	for (size_t i = 0; i < m->n; i++)
		m->w[i]->seen = false;
	for (size_t k = 0; k < n; k++) {
		struct watch *w = NULL;

		for (size_t i = 0; i < m->n && !w; i++)
			if (m->w[i]->pid == found[k].pid && m->w[i]->start_time == found[k].start_time)
				w = m->w[i];
		if (w) {
			w->seen = true;
			continue;
		}
		if (m->n == MONITOR_MAX_WATCHES || watch_new(m, found[k].pid, found[k].start_time,
							      found[k].comm, &w) < 0) {
			m->watch_failed++;
			continue;
		}
		w->seen = true;
		m->w[m->n++] = w;
		if (w->unreadable)
			mon_note(m, HWSPY_MONITOR_UNREADABLE, w->pid, w->error, w->why);
		else
			mon_note(m, HWSPY_MONITOR_WATCH, w->pid, 0, w->process);
	}
	for (size_t i = m->n; i-- > 0;) {
		if (!m->w[i]->seen)
			drop(m, i, true);
		else if (m->w[i]->unreadable &&
			 mon_since(now, m->w[i]->born_ns) >= (uint64_t) (m->o.every * 1e9))
			drop(m, i, false);
		else
			continue;
		dropped = true;
	}
	/* what a recorder's thread freed stays in its malloc arena, each thread's own: given
	 * back, so that processes coming and going leave the monitor's memory flat */
	if (dropped || mon_since(now, m->trimmed_ns) >= TRIM_EVERY_NS) {
		m->trimmed_ns = now;
		malloc_trim(0);
	}
}

struct serve_ctx {
	struct hwspy_monitor *m;
	char *body;
	size_t len;
};

static int respond(void *ctx, const struct http_request *req, int *status, const char **ctype,
		   const char **body, size_t *len)
{
	struct serve_ctx *s = ctx;
	bool om = metrics_wants_openmetrics(req->accept);
	FILE *f;

	/* on the loopback, a name that is not the loopback's is a web page's (DNS rebinding):
	 * the metrics name the services' functions and files */
	if (s->m->loopback && req->host[0] && !http_host_is_loopback(req->host)) {
		static const char no[] = "forbidden: hwspy monitor listens on the loopback and "
					 "answers requests to it by a loopback name alone\n";

		*status = 403;
		*ctype = "text/plain; charset=utf-8";
		*body = no;
		*len = sizeof(no) - 1;
		return 0;
	}
	if (strcmp(req->path, "/metrics") && strncmp(req->path, "/metrics?", 9)) {
		static const char index[] = "hwspy monitor: the metrics are at /metrics\n";
		static const char none[] = "not found: the metrics are at /metrics\n";
		bool root = !strcmp(req->path, "/");

		*status = root ? 200 : 404;
		*ctype = "text/plain; charset=utf-8";
		*body = root ? index : none;
		*len = root ? sizeof(index) - 1 : sizeof(none) - 1;
		return 0;
	}
	f = open_memstream(&s->body, &s->len);
	if (!f || mon_write_metrics(s->m, om, f) < 0) {
		if (f)
			fclose(f);
		s->m->scrape_errors++;
		*status = 500;
		*ctype = "text/plain; charset=utf-8";
		*body = "cannot build the metrics\n";
		*len = strlen(*body);
		return 0;
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	s->m->scrapes++;
	*status = 200;
	*ctype = metrics_content_type(om);
	*body = s->body;
	*len = s->len;
	return 0;
}

static void serve(struct hwspy_monitor *m)
{
	for (int i = 0; i < SERVE_MAX; i++) {
		struct serve_ctx s = { .m = m };
		int r = http_serve_one(m->listen_fd, SERVE_TIMEOUT_MS, respond, &s);

		free(s.body);
		if (r == -EAGAIN)
			return;
		if (r < 0)
			mon_note(m, HWSPY_MONITOR_HTTP_FAILED, 0, r, "");
	}
}

/* The ticks due now: the waits of every watch, their rotations. */
static void ticks(struct hwspy_monitor *m, uint64_t now)
{
	uint64_t dt = m->last_tick_ns ? now - m->last_tick_ns : TICK_NS;

	m->last_tick_ns = now;
	for (size_t i = 0; i < m->n; i++) {
		watch_tick(m->w[i], now, dt);
		watch_rotate(m->w[i], now, false);
	}
}

int hwspy_monitor_run(struct hwspy_monitor *m, volatile sig_atomic_t *stop,
		      volatile sig_atomic_t *reopen)
{
	lib_reason_clear();
	while (!*stop) {
		uint64_t now = mon_now_ns();
		struct pollfd p = { .fd = m->listen_fd, .events = POLLIN };

		if (now - m->last_scan_ns >= SCAN_EVERY_NS || !m->last_scan_ns) {
			m->last_scan_ns = now;
			scan(m, now);
			now = mon_now_ns();     /* after the watches the scan made */
		}
		if (now - m->last_tick_ns >= TICK_NS)
			ticks(m, now);
		if (reopen && *reopen) {
			*reopen = 0;
			int r = m->dir_path ? open_dir(m) : 0;

			if (m->dir_path)
				mon_note(m, r ? HWSPY_MONITOR_PROFILE_FAILED : HWSPY_MONITOR_REOPENED,
					 0, r, m->dir_path);
		}
		if (*stop)
			break;
		if (poll(&p, m->listen_fd >= 0 ? 1 : 0, POLL_MS) > 0 && (p.revents & POLLIN))
			serve(m);
	}
	while (m->n)
		drop(m, m->n - 1, false);
	return 0;
}

int hwspy_monitor_write_metrics(struct hwspy_monitor *m, bool openmetrics, FILE *out)
{
	lib_reason_clear();
	return mon_write_metrics(m, openmetrics, out);
}

const char *hwspy_monitor_note_words(enum hwspy_monitor_note note, pid_t pid, int err,
				     const char *detail, int verbosity, char *buf, size_t size)
{
	const char *why = err ? strerror(-err) : "";

	detail = detail ? detail : "";
	switch (note) {
	case HWSPY_MONITOR_WATCH:
		snprintf(buf, size, "watching pid %d (%s)", (int) pid, detail);
		return verbosity >= 0 ? buf : NULL;
	case HWSPY_MONITOR_NO_SAMPLING:
		snprintf(buf, size, "pid %d is counted but not sampled (no hottest functions, no "
			 "profiles): %s", (int) pid, detail);
		return buf;
	case HWSPY_MONITOR_UNREADABLE:
		snprintf(buf, size, "cannot watch pid %d: %s; its series say so, and it is tried "
			 "again each interval", (int) pid, detail);
		return buf;
	case HWSPY_MONITOR_GONE:
		snprintf(buf, size, "pid %d (%s) exited; its series are gone", (int) pid, detail);
		return verbosity >= 0 ? buf : NULL;
	case HWSPY_MONITOR_PROFILE:
		snprintf(buf, size, "wrote '%s'", detail);
		return verbosity > 0 ? buf : NULL;
	case HWSPY_MONITOR_PROFILE_FAILED:
		snprintf(buf, size, "cannot write the profile '%s': %s", detail, why);
		return buf;
	case HWSPY_MONITOR_REOPENED:
		snprintf(buf, size, "opened '%s' again (SIGHUP)", detail);
		return verbosity >= 0 ? buf : NULL;
	case HWSPY_MONITOR_HTTP_FAILED:
		snprintf(buf, size, "a scrape failed: %s", why);
		return verbosity > 0 ? buf : NULL;
	}
	return NULL;
}

int hwspy_parse_size(const char *s, unsigned long long *ret)
{
	unsigned long long v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (ULLONG_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (unsigned long long) (*p - '0');
	}
	if (p == s || (*p && (p[1] || !strchr("kKmMgG", *p))))
		return -EINVAL;
	for (int shift = *p ? (strchr("kK", *p) ? 10 : strchr("mM", *p) ? 20 : 30) : 0; shift;
	     shift -= 10) {
		if (v > ULLONG_MAX >> 10)
			return -EINVAL;
		v <<= 10;
	}
	*ret = v;
	return 0;
}

void hwspy_monitor_free(struct hwspy_monitor *m)
{
	if (!m)
		return;
	while (m->n)
		drop(m, m->n - 1, false);
	discover_free(m->discover);
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	profdir_close(m->dir);
	free(m->dir_path);
	free(m->found);
	hwspy_events_free(m->sample_events);
	for (size_t i = 0; i < 2 * m->n_labels; i++)
		free(m->labels[i]);
	free(m);
}
