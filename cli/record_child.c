/* record_child: the words of a launched command's end (args.h); libhwspy's hwspy_child_end()
 * ends it (session.c), these say its notes and how it ended. */
#include "cli/args.h"

void record_child_note(void *ctx, enum hwspy_child_note n, double seconds)
{
	const struct hwspy_child *c = ctx;
	struct hwspy_line l = { .code = n == HWSPY_CHILD_KILLING ? HWSPY_L_CHILD_KILLING :
				HWSPY_L_CHILD_WAITING, .s = { c->name, n == HWSPY_CHILD_WAITING ?
				"INT: SIGTERM" : "TERM: SIGKILL" }, .n = { (uint64_t) c->pid },
				.x = { seconds } };

	record_say(&l, 1, false);
}

void record_child_say(const struct hwspy_child *c)
{
	struct hwspy_line l[RECORD_LINES];

	record_say(l, hwspy_child_lines(c, c->name, l, RECORD_LINES), false);
}
