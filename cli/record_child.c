/*
 * record_child: the end of a command hwspy launched (see args.h), in words. The ending itself
 * (SIGINT, SIGTERM after the grace period, SIGKILL after one more; at once on a second signal
 * to hwspy; --keep-running leaves it) is libhwspy's hwspy_child_end(); its notes and how it
 * ended are said here (record_report.c's words).
 */
#include "cli/args.h"

static void said(void *ctx, enum hwspy_child_note n, double seconds)
{
	const struct record_child *c = ctx;
	struct hwspy_line l = { .code = n == HWSPY_CHILD_KILLING ? HWSPY_L_CHILD_KILLING :
				HWSPY_L_CHILD_WAITING, .s = { c->name }, .n = { (uint64_t) c->pid },
				.x = { seconds } };

	record_say(&l, 1, false);
}

static struct hwspy_child child_of(const struct record_child *c)
{
	return (struct hwspy_child) { .pid = c->pid, .ended = c->ended, .status = c->status,
				      .sent = c->sent, .kept = c->kept };
}

void record_child_end(struct record_child *c, const struct record_child_opts *o)
{
	struct hwspy_child hc = child_of(c);
	struct hwspy_child_end_opts ho = {
		.grace = o->grace, .keep_running = o->keep_running, .tty_sigint = o->tty_sigint,
		.quits = o->quits, .note_fn = said, .note_ctx = c,
	};

	hwspy_child_end(&hc, &ho);
	*c = (struct record_child) { .pid = c->pid, .name = c->name, .ended = hc.ended,
				     .status = hc.status, .sent = hc.sent, .kept = hc.kept };
}

int record_child_exit_code(const struct record_child *c)
{
	struct hwspy_child hc = child_of(c);

	return hwspy_child_exit_code(&hc);
}

void record_child_say(const struct record_child *c)
{
	struct hwspy_child hc = child_of(c);
	struct hwspy_line l[RECORD_LINES];

	record_say(l, hwspy_child_lines(&hc, c->name, l, RECORD_LINES), false);
}
