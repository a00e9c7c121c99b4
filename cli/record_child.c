/*
 * record_child: the end of a command hwspy launched (see args.h), in words. The ending itself
 * (SIGINT, SIGTERM after the grace period, SIGKILL after one more; at once on a second signal
 * to hwspy; --keep-running leaves it) is libhwspy's hwspy_child_end(); its notes are said here.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "base/log.h"
#include "cli/args.h"

static void said(void *ctx, enum hwspy_child_note n, double seconds)
{
	const struct record_child *c = ctx;

	if (n == HWSPY_CHILD_KILLING)
		log_info("interrupted again: killing '%s' (pid %d)", c->name, c->pid);
	else
		log_info("waiting for '%s' (pid %d) to end after SIGINT: SIGTERM in %.3g s, "
			 "then SIGKILL (Ctrl-C: SIGKILL now)", c->name, c->pid, seconds);
}

void record_child_end(struct record_child *c, const struct record_child_opts *o)
{
	struct hwspy_child hc = {
		.pid = c->pid, .ended = c->ended, .status = c->status, .sent = c->sent,
		.kept = c->kept,
	};
	struct hwspy_child_end_opts ho = {
		.grace = o->grace, .keep_running = o->keep_running, .tty_sigint = o->tty_sigint,
		.quits = o->quits, .note_fn = said, .note_ctx = c,
	};

	hwspy_child_end(&hc, &ho);
	c->ended = hc.ended;
	c->status = hc.status;
	c->sent = hc.sent;
	c->kept = hc.kept;
}

int record_child_exit_code(const struct record_child *c)
{
	struct hwspy_child hc = { .pid = c->pid, .ended = c->ended, .status = c->status,
				  .kept = c->kept };

	return hwspy_child_exit_code(&hc);
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
