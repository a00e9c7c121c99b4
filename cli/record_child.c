/* record_child: the end of a command hwspy launched (args.h): libhwspy's hwspy_child_end()
 * ends it; its notes and how it ended are said here. */
#include "cli/args.h"

static void said(void *ctx, enum hwspy_child_note n, double seconds)
{
	const struct record_child *c = ctx;
	struct hwspy_line l = { .code = n == HWSPY_CHILD_KILLING ? HWSPY_L_CHILD_KILLING :
				HWSPY_L_CHILD_WAITING, .s = { c->name, n == HWSPY_CHILD_WAITING ?
				"INT: SIGTERM" : "TERM: SIGKILL" }, .n = { (uint64_t) c->pid },
				.x = { seconds } };

	record_say(&l, 1, false);
}

#define CHILD_OF(c) (&(struct hwspy_child) { .pid = (c)->pid, .ended = (c)->ended, \
			.status = (c)->status, .sent = (c)->sent, .kept = (c)->kept, \
			.as_asked = (c)->as_asked })

void record_child_end(struct record_child *c, const struct record_child_opts *o)
{
	struct hwspy_child hc = *CHILD_OF(c);
	struct hwspy_child_end_opts ho = {
		.grace = o->grace, .keep_running = o->keep_running, .tty_sigint = o->tty_sigint,
		.quits = o->quits, .interrupted = o->quits && *o->quits, .note_fn = said, .note_ctx = c,
	};

	hwspy_child_end(&hc, &ho);
	c->ended = hc.ended, c->status = hc.status, c->sent = hc.sent, c->kept = hc.kept;
	c->as_asked = hc.as_asked;
}

int record_child_exit_code(const struct record_child *c)
{
	return hwspy_child_exit_code(CHILD_OF(c));
}

void record_child_say(const struct record_child *c)
{
	struct hwspy_line l[RECORD_LINES];

	record_say(l, hwspy_child_lines(CHILD_OF(c), c->name, l, RECORD_LINES), false);
}
