/*
 * child.c: the end of a launched command (hwspy.h, "recording": hwspy_child_end()). Once
 * sampling ends before the command does, the command is ended in a way Python does not report
 * (no KeyboardInterrupt traceback): SIGTERM, SIGKILL after the grace period. Where sampling
 * ended on the user's signal instead, it gets SIGINT first (not again where a Ctrl-C on the
 * terminal reached it already), as timeout(1) ends one. A change of the caller's quit counter
 * meanwhile kills it at once. The signals go to what the command started too: its process
 * group where it leads one of its own (the launch gives it one unless the caller's group holds
 * the terminal), else its descendants in its group. Told through the caller's note function,
 * never printed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/procfs.h"
#include "lib/internal.h"

#define POLL_NS 10000000L               /* how often the command's end is looked for */
#define QUIET_NS 500000000ULL           /* a command that ends sooner than this: no word of it */
#define DESCENDANTS_MAX 256             /* the command's own processes signalled with it */

static bool reap(struct hwspy_child *c, int flags)
{
	int ws;
	pid_t r;

	while ((r = waitpid(c->pid, &ws, flags)) < 0 && errno == EINTR)
		;
	if (r != c->pid)
		return r < 0;   /* not our child any more (ECHILD): nothing to wait for */
	if (!WIFEXITED(ws) && !WIFSIGNALED(ws))
		return false;
	c->ended = true;
	c->status = ws;
	return true;
}

/* The command's process group where it leads one of its own (0: it shares the caller's). */
static pid_t own_group(const struct hwspy_child *c)
{
	pid_t g = getpgid(c->pid);

	return g == c->pid && g != getpgrp() ? g : 0;
}

/* sig to the command and what it started: its group, else (sharing the caller's group, where
 * a signal to the group would reach the caller) its descendants that are in its group */
static void send_sig(struct hwspy_child *c, pid_t group, int sig)
{
	c->sent = sig;
	if (group > 0 && kill(-group, sig) == 0)
		return;
	if (!c->ended) {
		pid_t d[DESCENDANTS_MAX], g = getpgid(c->pid);
		size_t n = g > 0 ? procfs_descendants(c->pid, d, DESCENDANTS_MAX) : 0;

		(void) kill(c->pid, sig);
		for (size_t i = 0; i < n; i++)
			if (getpgid(d[i]) == g)
				(void) kill(d[i], sig);
	}
}

/* Whether the command's group still has a live process: a zombie does not count (an init that
 * is slow to reap the orphans would hold the group until SIGKILL). Reads /proc's stat files. */
static bool group_left(pid_t group)
{
	struct dirent *e;
	bool left = false;
	DIR *d;

	if (group <= 0 || kill(-group, 0) < 0)
		return false;
	d = opendir("/proc");
	if (!d)
		return true;
	while (!left && (e = readdir(d))) {
		char path[300], text[512], *p, state;
		int pgrp, fd;
		ssize_t n;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, text, sizeof(text) - 1);
		(void) close(fd);
		if (n <= 0)
			continue;
		text[n] = '\0';
		/* "PID (COMM) STATE PPID PGRP ...": COMM may hold anything, ')' too */
		p = strrchr(text, ')');
		if (p && sscanf(p + 1, " %c %*d %d", &state, &pgrp) == 2 && pgrp == group)
			left = state != 'Z' && state != 'X';
	}
	(void) closedir(d);
	return left;
}

static void told(const struct hwspy_child_end_opts *o, enum hwspy_child_note n, double s)
{
	if (o->note_fn)
		o->note_fn(o->note_ctx, n, s);
}

void hwspy_child_end(struct hwspy_child *c, const struct hwspy_child_end_opts *o)
{
	double grace_s = o->grace > 0 ? o->grace : 0;
	uint64_t start = clock_now_ns(), since = start, grace = (uint64_t) (grace_s * 1e9);
	sig_atomic_t quits = o->quits ? *o->quits : 0;
	bool waiting_told = false;
	pid_t group;

	if (c->pid <= 0 || c->ended)
		return;
	group = own_group(c);
	if (reap(c, WNOHANG))
		return;         /* it ended by itself: what it left running is its own */
	if (o->keep_running) {
		c->kept = true;
		return;
	}
	if (!o->interrupted) {
		/* sampling ended as asked (-d, the caller's end): so does the command, whatever
		 * signal it takes */
		c->as_asked = true;
		send_sig(c, group, SIGTERM);
	} else if (o->tty_sigint && getpgid(c->pid) == getpgrp()) {
		/* a Ctrl-C on the terminal reached the command too: a second SIGINT would
		 * interrupt its own clean-up */
		c->sent = SIGINT;
	} else {
		send_sig(c, group, SIGINT);
	}
	/* until the command is reaped and its group empty (or SIGKILLed: a zombie another
	 * process does not reap would hold it) */
	while (!(c->ended || reap(c, WNOHANG)) || (group_left(group) && c->sent != SIGKILL)) {
		struct timespec ts = { 0, POLL_NS };
		uint64_t now = clock_now_ns();

		if (o->quits && *o->quits != quits) {
			told(o, HWSPY_CHILD_KILLING, 0);
			send_sig(c, group, SIGKILL);
			if (!c->ended)
				(void) reap(c, 0);
			break;
		}
		if (!waiting_told && now - start >= QUIET_NS && c->sent != SIGKILL) {
			double left = grace_s - (double) (now - since) / 1e9;

			told(o, c->sent == SIGINT ? HWSPY_CHILD_WAITING : HWSPY_CHILD_WAITING_KILL,
			     left > 0 ? left : 0);
			waiting_told = true;
		}
		if (now - since >= grace) {
			send_sig(c, group, c->sent == SIGINT ? SIGTERM : SIGKILL);
			since = now;
			if (c->sent == SIGKILL) {
				if (!c->ended)
					(void) reap(c, 0);
				break;
			}
		}
		(void) nanosleep(&ts, NULL);    /* a signal to the caller cuts it short */
	}
}

int hwspy_child_exit_code(const struct hwspy_child *c)
{
	if (c->kept || !c->ended || c->as_asked)
		return 0;
	if (WIFSIGNALED(c->status))
		return 128 + WTERMSIG(c->status);
	return WEXITSTATUS(c->status);
}

void hwspy_recorder_end_command(struct hwspy_recorder *rec, const struct hwspy_child_end_opts *o,
				struct hwspy_child *c)
{
	struct hwspy_record_stats st;

	hwspy_recorder_stop(rec);
	hwspy_recorder_stats(rec, &st);
	*c = (struct hwspy_child) { .pid = hwspy_recorder_pid(rec) };
	if (st.target_exited) {
		c->ended = true;        /* the sampler reaped it */
		c->status = st.exit_status;
	}
	hwspy_child_end(c, o);
}
