/*
 * record_limits: the words for threads the sampler left out and for the limits that made it
 * (see args.h): RLIMIT_NOFILE, RLIMIT_MEMLOCK and kernel.perf_event_mlock_kb, as libhwspy
 * reads them (hwspy_limits()).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"

static int put_limit(struct buf *out, long long v, const char *suffix)
{
	if (v < 0)
		return buf_puts(out, "unlimited");
	return buf_printf(out, "%llu%s", (unsigned long long) v, suffix);
}

int record_memlock_limits(struct buf *out)
{
	struct hwspy_limits l;
	int r;

	hwspy_limits(&l);
	r = buf_puts(out, "RLIMIT_MEMLOCK ");
	if (r >= 0)
		r = put_limit(out, l.memlock_kib, " KiB");
	if (r >= 0)
		r = buf_puts(out, " ('ulimit -l') beyond kernel.perf_event_mlock_kb ");
	if (r >= 0)
		r = l.perf_mlock_kib >= 0 ? buf_printf(out, "%lld KiB", l.perf_mlock_kib) :
					    buf_puts(out, "(unreadable)");
	if (r >= 0)
		r = buf_puts(out, " per CPU");
	return r;
}

int record_nofile_limit(struct buf *out)
{
	struct hwspy_limits l;
	int r;

	hwspy_limits(&l);
	r = buf_puts(out, "ulimit -n ");
	if (r >= 0)
		r = put_limit(out, l.nofile, "");
	return r;
}

int record_threads_missed(const struct hwspy_record_stats *st, struct buf *out)
{
	static const char *const what[HWSPY_FAIL_N] = {
		[HWSPY_FAIL_FILES] = "out of file descriptors",
		[HWSPY_FAIL_MEMLOCK] = "over the locked-memory limit",
		[HWSPY_FAIL_MEMORY] = "out of memory",
		[HWSPY_FAIL_TABLE] = "over hwspy's table of threads",
		[HWSPY_FAIL_PTRACE] = "could not be stopped (ptrace refused)",
		[HWSPY_FAIL_OTHER] = "failed",
	};
	int r = 0, n = 0;

	for (int i = 0; r >= 0 && i < HWSPY_FAIL_N; i++) {
		uint64_t k = st->threads_failed_by[i];

		if (!k)
			continue;
		r = buf_printf(out, "%s%" PRIu64 " %s", n++ ? ", " : "", k, what[i]);
		if (r < 0)
			break;
		if (i == HWSPY_FAIL_FILES) {
			r = buf_puts(out, " (");
			if (r >= 0)
				r = record_nofile_limit(out);
			if (r >= 0)
				r = buf_putc(out, ')');
		} else if (i == HWSPY_FAIL_MEMLOCK) {
			r = buf_puts(out, " (");
			if (r >= 0)
				r = record_memlock_limits(out);
			if (r >= 0)
				r = buf_putc(out, ')');
		} else if (i == HWSPY_FAIL_OTHER) {
			r = buf_printf(out, " (%s)", strerror(-st->threads_failed_errno));
		}
	}
	return r;
}
