/*
 * record_limits: the words for the threads the sampler left out and the limits that made it
 * (see args.h), as libhwspy's hwspy_threads_missed_lines() lists them.
 */
#include "cli/args.h"

int record_threads_missed(const struct hwspy_record_stats *st, struct buf *out)
{
	struct hwspy_line l[RECORD_LINES * 2];

	record_render(out, l, hwspy_threads_missed_lines(st, l, RECORD_LINES * 2));
	return 0;
}
