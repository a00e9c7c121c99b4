/*
 * child.c: the end of a launched command (hwspy.h, "recording": hwspy_child_end()). Once
 * sampling ends before the command does, the command is ended as timeout(1) ends one: SIGINT,
 * SIGTERM after the grace period, SIGKILL after one more; a change of the caller's quit
 * counter meanwhile kills it at once. Told through the caller's note function, never printed.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "lib/internal.h"

#define POLL_NS 10000000L               /* how often the command's end is looked for */
#define QUIET_NS 500000000ULL           /* a command that ends sooner than this: no word of it */

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

static void send_sig(struct hwspy_child *c, int sig)
{
	(void) kill(c->pid, sig);
	c->sent = sig;
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

	if (c->pid <= 0 || c->ended || reap(c, WNOHANG))
		return;
	if (o->keep_running) {
		c->kept = true;
		return;
	}
	/* a Ctrl-C on the terminal reached the command too, if it is in the caller's process
	 * group: a second SIGINT would interrupt its own clean-up */
	if (o->tty_sigint && getpgid(c->pid) == getpgrp())
		c->sent = SIGINT;
	else
		send_sig(c, SIGINT);
	while (!reap(c, WNOHANG)) {
		struct timespec ts = { 0, POLL_NS };
		uint64_t now = clock_now_ns();

		if (o->quits && *o->quits != quits) {
			told(o, HWSPY_CHILD_KILLING, 0);
			send_sig(c, SIGKILL);
			(void) reap(c, 0);
			break;
		}
		if (!waiting_told && now - start >= QUIET_NS && c->sent != SIGKILL) {
			double left = grace_s - (double) (now - since) / 1e9;

			told(o, HWSPY_CHILD_WAITING, left > 0 ? left : 0);
			waiting_told = true;
		}
		if (now - since >= grace) {
			send_sig(c, c->sent == SIGINT ? SIGTERM : SIGKILL);
			since = now;
			if (c->sent == SIGKILL) {
				(void) reap(c, 0);
				break;
			}
		}
		(void) nanosleep(&ts, NULL);    /* a signal to the caller cuts it short */
	}
}

int hwspy_child_exit_code(const struct hwspy_child *c)
{
	if (c->kept || !c->ended)
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
