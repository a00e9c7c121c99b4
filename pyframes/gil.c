/*
 * gil: the GIL of the main interpreter, read live (pyframes_gil()), and where it lies for a
 * reader of its own (pyframes_gil_spec()). 3.8-3.11 keep one struct _gil_runtime_state inside
 * _PyRuntime (ceval.gil); from 3.12 each interpreter's ceval.gil points to the state it uses
 * (the main interpreter's own _gil). The main interpreter is the one created first, the last
 * of the runtime's list (CPython puts a new interpreter at its head).
 */
#include <errno.h>
#include <string.h>

#include "pyframes/pyframes_internal.h"

/* One u64 of the target, uncached and counted in no stats (the GIL changes hands all the time:
 * no cached page may answer for it): 0, -ESRCH, or -EFAULT. */
static int gil_read(const struct pyframes *pf, uint64_t addr, void *buf, size_t len)
{
	int r = pf->remote->read(pf->remote->ctx, addr, buf, len);

	return r < 0 && r != -ESRCH ? -EFAULT : r;
}

int pf_main_interp(const struct pyframes *pf, uint64_t *ret)
{
	const struct py_layout *l = &pf->layout;
	uint64_t interp, next;
	int r;

	r = gil_read(pf, pf->runtime + l->rt_interp_head, &interp, 8);
	if (r < 0)
		return r;
	for (unsigned n = 0; n < PF_MAX_INTERPS; n++) {
		if (!pf_ptr_ok(interp))
			return -EAGAIN;
		r = gil_read(pf, interp + l->is_next, &next, 8);
		if (r < 0)
			return r == -ESRCH ? r : -EAGAIN;
		if (!next) {
			*ret = interp;
			return 0;
		}
		interp = next;
	}
	return -EAGAIN;
}

/* Whether the layout places the GIL at all (not where it says there is none). */
static bool gil_known(const struct py_layout *l)
{
	return (l->rt_gil != PF_NONE || l->is_ceval_gil != PF_NONE) &&
	       l->gil_locked != PF_NONE && l->gil_holder != PF_NONE &&
	       l->gil_locked <= PF_GIL_READ_MAX - 4 && l->gil_holder <= PF_GIL_READ_MAX - 8;
}

/* The remote address of the struct _gil_runtime_state in use. */
static int gil_addr(const struct pyframes *pf, uint64_t *ret)
{
	const struct py_layout *l = &pf->layout;
	uint64_t interp, gil;
	int r;

	if (l->rt_gil != PF_NONE) {
		*ret = pf->runtime + l->rt_gil;
		return 0;
	}
	r = pf_main_interp(pf, &interp);
	if (r < 0)
		return r;
	r = gil_read(pf, interp + l->is_ceval_gil, &gil, 8);
	if (r < 0)
		return r == -ESRCH ? r : -EAGAIN;
	if (!pf_ptr_ok(gil))
		return -EFAULT;   /* not created yet (early start-up), or no pointer */
	*ret = gil;
	return 0;
}

int pyframes_gil_spec(const struct pyframes *pf, uint64_t *ret_addr, uint32_t *ret_locked_off,
		      uint32_t *ret_holder_off)
{
	int r;

	*ret_addr = 0;
	if (!gil_known(&pf->layout))
		return -ENOTSUP;
	r = gil_addr(pf, ret_addr);
	if (r < 0) {
		*ret_addr = 0;
		return r;
	}
	*ret_locked_off = pf->layout.gil_locked;
	*ret_holder_off = pf->layout.gil_holder;
	return 0;
}

int pyframes_gil(const struct pyframes *pf, struct pyframes_gil *ret)
{
	const struct py_layout *l = &pf->layout;
	unsigned char g[PF_GIL_READ_MAX];
	uint64_t addr;
	uint32_t locked;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!gil_known(l))
		return 0;
	r = gil_addr(pf, &addr);
	if (r == 0)
		r = gil_read(pf, addr, g, sizeof(g));
	if (r < 0)
		return r;
	/* locked is 0 or 1 (ceval_gil.c: take_gil() sets it to 1, drop_gil() to 0); anything
	 * else is no GIL state, or one read as it was torn */
	locked = pf_u32(g, l->gil_locked);
	if (locked > 1)
		return -EAGAIN;
	ret->holder = pf_u64(g, l->gil_holder);
	if (ret->holder && !pf_ptr_ok(ret->holder))
		return -EAGAIN;
	ret->known = true;
	ret->locked = locked == 1;
	return 0;
}
