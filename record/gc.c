/*
 * gc: whether each sample's thread ran the interpreter's cyclic garbage collector, and the
 * [gc] frame that then ends its stack. The collector's flag (pyframes_gc()) is the main
 * interpreter's; the thread collecting is the one holding the GIL, so a thread known not to
 * hold it (a C extension that let it go, a thread waiting for it) is never marked. The flag
 * comes from the sample's capture where the capture program read it at the overflow (exact).
 * A stack the capture gave without it (a program made before the flag's place was known, made
 * again once it is: record_gil_capture_late()) is not marked: a flag read now is not the one
 * at that instant. Else, the stack read live, the flag is read live after it: exact while
 * its thread is stopped (--ptrace), else as late as that read, and then taken only within
 * RECORD_GC_STALE_NS of the sample (a nonblocking read, up to a tick late): a collection
 * lasts milliseconds, so a later read (the capture's first samples, a reader far behind) says
 * nothing of the sample's instant, and no [gc] is shown.
 */
#include <string.h>

#include "base/clock.h"
#include "record/internal.h"

int record_gc_at_sample(struct recorder *rec, const struct sample *s, int gil)
{
	const struct sample_capture *c = s->capture;
	struct pyframes_gc g;

	if (gil == RECORD_GIL_FREE || !rec->pf)
		return gil;
	if (c && rec->capture_gen == rec->pf_gen && c->gc_known)
		return c->gc_collecting ? gil | RECORD_IN_GC : gil;
	if (c && rec->capture_gen == rec->pf_gen && c->status != SAMPLE_CAPTURE_NO_ROOT)
		return gil;     /* a captured stack, without the flag */
	if (!s->stopped && clock_now_ns() > s->time_ns + RECORD_GC_STALE_NS)
		return gil;
	if (pyframes_gc(rec->pf, &g) < 0 || !g.known || !g.collecting)
		return gil;
	return gil | RECORD_IN_GC;
}

int record_gc_frame(struct recorder *rec, int gil, size_t *depth)
{
	size_t at = *depth;
	uint32_t id;

	if (!(gil & RECORD_IN_GC))
		return gil;
	gil &= ~RECORD_IN_GC;
	if (*depth >= sizeof(rec->ids) / sizeof(rec->ids[0]) ||
	    record_special_frame(rec, RECORD_GC_FRAME, &id) < 0)
		return gil;
	/* before the kernel's frames (--kernel), which stay at the leaf end */
	while (at > 0) {
		const struct profile_frame *f = profile_frame(rec->prof, rec->ids[at - 1]);

		if (!f || f->kind != FRAME_KERNEL)
			break;
		at--;
	}
	memmove(&rec->ids[at + 1], &rec->ids[at], (*depth - at) * sizeof(rec->ids[0]));
	rec->ids[at] = id;
	(*depth)++;
	return gil;
}
