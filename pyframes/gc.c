/*
 * gc: whether the main interpreter's cyclic garbage collector is collecting, read live
 * (pyframes_gc()), and where that flag lies for a reader of its own (pyframes_gc_spec()).
 * struct _gc_runtime_state is _PyRuntime.gc in 3.8 and each interpreter's gc from 3.9 on; its
 * int collecting is 1 from the start to the end of a collection, gc.collect()'s or an
 * automatic one, callbacks and finalizers included, and 0 otherwise.
 */
#include <errno.h>

#include "pyframes/pyframes_internal.h"

/* Whether the layout places the flag at all. */
static bool gc_known(const struct py_layout *l)
{
	return (l->rt_gc != PF_NONE || l->is_gc != PF_NONE) && l->gc_collecting != PF_NONE;
}

/* The remote address of the collecting int. */
static int gc_addr(const struct pyframes *pf, uint64_t *ret)
{
	const struct py_layout *l = &pf->layout;
	uint64_t interp;
	int r;

	if (l->rt_gc != PF_NONE) {
		*ret = pf->runtime + l->rt_gc + l->gc_collecting;
		return 0;
	}
	r = pf_main_interp(pf, &interp);
	if (r < 0)
		return r;
	*ret = interp + l->is_gc + l->gc_collecting;
	return 0;
}

int pyframes_gc_spec(const struct pyframes *pf, uint64_t *ret_addr)
{
	int r;

	*ret_addr = 0;
	if (!gc_known(&pf->layout))
		return -ENOTSUP;
	r = gc_addr(pf, ret_addr);
	if (r < 0)
		*ret_addr = 0;
	return r;
}

int pyframes_gc(const struct pyframes *pf, struct pyframes_gc *ret)
{
	uint64_t addr;
	uint32_t collecting;
	int r;

	*ret = (struct pyframes_gc) { 0 };
	if (!gc_known(&pf->layout))
		return 0;
	r = gc_addr(pf, &addr);
	if (r < 0)
		return r;
	/* uncached, counted in no stats: the flag changes at every collection */
	r = pf->remote->read(pf->remote->ctx, addr, &collecting, sizeof(collecting));
	if (r < 0)
		return r == -ESRCH ? r : -EFAULT;
	if (collecting > 1)
		return -EAGAIN;   /* no GC state there */
	ret->known = true;
	ret->collecting = collecting == 1;
	return 0;
}
