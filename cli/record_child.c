/*
 * record_child: the end of a command hwspy record launched (see record.h). Once sampling ends
 * before the command does (-d, Ctrl-C, SIGTERM, or hwspy failed), the command is ended as
 * timeout(1) ends one: SIGINT, SIGTERM after the grace period, SIGKILL after one more; a signal
 * to hwspy meanwhile (a second Ctrl-C) kills it at once. --keep-running leaves it running.
 */
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "cli/record.h"

#define POLL_NS 10000000L               /* how often the command's end is looked for */
#define QUIET_NS 500000000ULL           /* a command that ends sooner than this: no word of it */

static bool reap(struct record_child *c, int flags)
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

static void send(struct record_child *c, int sig)
{
	(void) kill(c->pid, sig);
	c->sent = sig;
}

void record_child_end(struct record_child *c, const struct record_child_opts *o)
{
	uint64_t start = clock_now_ns(), since = start, grace = (uint64_t) (o->grace * 1e9);
	sig_atomic_t quits = *o->quits;
	bool told = false;

	if (c->ended || reap(c, WNOHANG))
		return;
	if (o->keep_running) {
		c->kept = true;
		return;
	}
	/* a Ctrl-C on the terminal reached the command too, if it is in hwspy's process group:
	 * a second SIGINT would interrupt its own clean-up */
	if (o->tty_sigint && getpgid(c->pid) == getpgrp())
		c->sent = SIGINT;
	else
		send(c, SIGINT);
	while (!reap(c, WNOHANG)) {
		struct timespec ts = { 0, POLL_NS };
		uint64_t now = clock_now_ns();

		if (*o->quits != quits) {
			log_info("interrupted again: killing '%s' (pid %d)", c->name, c->pid);
			send(c, SIGKILL);
			(void) reap(c, 0);
			break;
		}
		if (!told && now - start >= QUIET_NS && c->sent != SIGKILL) {
			log_info("waiting for '%s' (pid %d) to end after SIGINT: SIGTERM in %.3g s, "
				 "then SIGKILL (Ctrl-C: SIGKILL now)", c->name, c->pid,
				 o->grace - (double) (now - since) / 1e9 > 0
				 ? o->grace - (double) (now - since) / 1e9 : 0);
			told = true;
		}
		if (now - since >= grace) {
			send(c, c->sent == SIGINT ? SIGTERM : SIGKILL);
			since = now;
			if (c->sent == SIGKILL) {
				(void) reap(c, 0);
				break;
			}
		}
		(void) nanosleep(&ts, NULL);    /* a signal to hwspy cuts it short */
	}
}

int record_child_exit_code(const struct record_child *c)
{
	if (c->kept || !c->ended)
		return 0;
	if (WIFSIGNALED(c->status))
		return 128 + WTERMSIG(c->status);
	return WEXITSTATUS(c->status);
}

static const char *sig_name(int sig)
{
	const char *n = sigabbrev_np(sig);

	return n ? n : "?";
}

void record_child_say(const struct record_child *c)
{
	if (c->kept) {
		log_info("'%s' (pid %d) keeps running (--keep-running)", c->name, c->pid);
		return;
	}
	if (!c->ended)
		return;
	if (WIFSIGNALED(c->status) && WTERMSIG(c->status) == c->sent)
		log_info("'%s' (pid %d) was ended by hwspy's SIG%s: exit status %d", c->name, c->pid,
			 sig_name(c->sent), record_child_exit_code(c));
	else if (WIFSIGNALED(c->status))
		log_info("'%s' (pid %d) was killed by SIG%s%s%s: exit status %d", c->name, c->pid,
			 sig_name(WTERMSIG(c->status)), c->sent ? " after hwspy's SIG" : "",
			 c->sent ? sig_name(c->sent) : "", record_child_exit_code(c));
	else
		log_info("'%s' (pid %d) exited with status %d%s%s", c->name, c->pid,
			 WEXITSTATUS(c->status), c->sent ? " after hwspy's SIG" : "",
			 c->sent ? sig_name(c->sent) : "");
}
