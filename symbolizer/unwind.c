/*
 * unwind.c: DWARF CFI unwinding of a sampled user-stack copy, two ways behind one switch.
 *
 * Both read memory the same way (mem_read): an address inside the stack copy comes from the
 * copy, any other address from the file image of the module mapped there (code, .eh_frame_hdr,
 * .eh_frame); nothing is read from the live target. Every frame must move SP up (bounded by
 * the copy), and at most `max` frames are produced.
 *
 * libdw: the Dwfl of the symbolizer gets a process state once (dwfl_attach_state) whose
 * callbacks serve the current sample; dwfl_getthread_frames() then uses each module's
 * .eh_frame/.debug_frame, cached in its Dwfl_Module.
 * libunwind: one remote address space with our accessors; find_proc_info hands libunwind the
 * module's .eh_frame_hdr search table (as perf does), and the address space caches the parsed
 * register rules per IP (UNW_CACHE_GLOBAL). Modules without .eh_frame_hdr are not unwound
 * through by this one (Debian's libunwind exports no .debug_frame finder).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <elfutils/libdwfl.h>

#ifdef HWSPY_HAVE_LIBUNWIND
#define UNW_REMOTE_ONLY
#include <libunwind.h>
#endif

#include "symbolizer/symbolizer_internal.h"

/* DWARF x86-64 register number (0..16, rip = 16) -> index in the perf regs array. */
static const int sym_dwarf_to_perf[17] = {
	REGS_AX, REGS_DX, REGS_CX, REGS_BX, REGS_SI, REGS_DI, REGS_BP,
	REGS_SP, REGS_R8, REGS_R9, REGS_R10, REGS_R11, REGS_R12, REGS_R13,
	REGS_R14, REGS_R15, REGS_IP,
};

static bool mem_read(const struct symbolizer *sym, uint64_t addr, uint64_t *val)
{
	const struct unwind_ctx *c = &sym->cur;
	const struct sym_module *m;

	if (addr >= c->sp && c->stack_size >= 8 && addr - c->sp <= c->stack_size - 8) {
		memcpy(val, c->stack + (addr - c->sp), 8);
		return true;
	}
	m = maps_find_module(sym, addr);
	if (!m)
		return false;
	if (module_read(m, addr, val, 8))
		return true;
	/* the last bytes of a segment: read what is there, zero the rest */
	for (size_t n = 7; n > 0; n--) {
		*val = 0;
		if (module_read(m, addr, val, n))
			return true;
	}
	return false;
}

/* ---- libdw ------------------------------------------------------------------------------------ */

static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct symbolizer *sym = arg;

	(void) dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = sym;
	return sym->pid;
}

static bool dw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void) dwfl;
	(void) tid;
	*thread_argp = arg;
	return true;
}

static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	uint64_t v;

	(void) dwfl;
	if (!mem_read(arg, addr, &v))
		return false;
	*result = v;
	return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct symbolizer *sym = thread_arg;
	Dwarf_Word r[17];

	for (int i = 0; i < 17; i++)
		r[i] = sym->cur.regs[sym_dwarf_to_perf[i]];
	return dwfl_thread_state_registers(thread, 0, 17, r);
}

static const Dwfl_Thread_Callbacks dw_callbacks = {
	.next_thread = dw_next_thread,
	.get_thread = dw_get_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_initial_registers,
};

struct dw_walk {
	uint64_t *ips;
	size_t max, n;
	uint64_t last_sp;
	uint64_t last_bp;       /* the last frame's RBP, when known */
	bool have_sp, have_bp;  /* for the last frame */
};

static int dw_frame_cb(Dwfl_Frame *state, void *arg)
{
	struct dw_walk *w = arg;
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	w->have_sp = dwfl_frame_reg(state, 7, &sp) == 0;
	if (w->have_sp) {
		if (w->n > 0 && sp <= w->last_sp)
			return DWARF_CB_ABORT;
		w->last_sp = sp;
	}
	w->have_bp = dwfl_frame_reg(state, 6, &w->last_bp) == 0;
	w->ips[w->n++] = pc;
	return w->n < w->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

#define JIT_STEPS 32

/* The frame above a JIT frame. Code in anonymous executable memory has no CFI; the JIT frames
 * a Python stack holds are CPython's perf trampolines (3.12+, -X perf), met at the return
 * address of their one call: `push rbp; mov rsp, rbp; call *rcx` in some builds, `sub 8, rsp;
 * call *rcx` in others. Either way their caller's return address is at SP + 8 and its SP is
 * SP + 16; with the first form SP points at the saved RBP (a stack address above SP), with the
 * second RBP is untouched. True with regs set for a new unwind from the caller (the other
 * registers as sampled: CFI frames restore the ones they use from the stack). */
static bool jit_step(const struct symbolizer *sym, const struct dw_walk *w, uint64_t *regs)
{
	const struct unwind_ctx *c = &sym->cur;
	const struct sym_region *g;
	uint64_t sp = w->last_sp, saved, ra;

	if (w->n == 0 || w->n >= w->max || !w->have_sp || c->stack_size < 16)
		return false;
	g = maps_find(sym, w->ips[w->n - 1]);
	if (!g || g->kind != REGION_ANON || !g->exec)
		return false;
	if (sp < c->sp || sp - c->sp > c->stack_size - 16)
		return false;
	memcpy(&saved, c->stack + (sp - c->sp), 8);
	memcpy(&ra, c->stack + (sp - c->sp) + 8, 8);
	if (ra == 0)
		return false;
	memcpy(regs, c->regs, REGS_USER_N * sizeof(*regs));
	regs[REGS_IP] = ra;
	regs[REGS_SP] = sp + 16;
	if (saved > sp + 16 && saved - c->sp < c->stack_size)
		regs[REGS_BP] = saved;
	else if (w->have_bp)
		regs[REGS_BP] = w->last_bp;
	return true;
}

static int unwind_libdw(struct symbolizer *sym, uint64_t *ret_ips, size_t max, size_t *ret_n)
{
	struct dw_walk w = { .ips = ret_ips, .max = max };
	const uint64_t *sampled = sym->cur.regs;
	uint64_t regs[REGS_USER_N];

	if (!sym->dwfl_attached) {
		if (!dwfl_attach_state(sym->dwfl, NULL, sym->pid, &dw_callbacks, sym))
			return -ENOENT;
		sym->dwfl_attached = true;
	}
	(void) dwfl_getthread_frames(sym->dwfl, sym->pid, dw_frame_cb, &w);
	/* stopped in JIT code: step over it by its frame pointer and unwind on from its caller */
	for (int i = 0; i < JIT_STEPS && jit_step(sym, &w, regs); i++) {
		size_t before = w.n;

		sym->cur.regs = regs;
		w.have_bp = false;
		(void) dwfl_getthread_frames(sym->dwfl, sym->pid, dw_frame_cb, &w);
		if (w.n == before)
			break;
	}
	sym->cur.regs = sampled;
	*ret_n = w.n;
	return 0;
}

/* ---- libunwind -------------------------------------------------------------------------------- */

#ifdef HWSPY_HAVE_LIBUNWIND

extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

struct unwind_state {
	unw_addr_space_t as;
};

static int lu_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			     int need_unwind_info, void *arg)
{
	const struct symbolizer *sym = arg;
	const struct sym_module *m = maps_find_module(sym, ip);
	unw_dyn_info_t di;

	if (!m || m->eh_hdr_vaddr == 0)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	di.u.rti.segbase = m->bias + m->eh_hdr_vaddr;
	di.u.rti.table_data = m->bias + m->eh_table_vaddr;
	di.u.rti.table_len = m->eh_fde_count * 8 / sizeof(unw_word_t);
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
}

static void lu_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	/* libunwind frees what dwarf_search_unwind_table allocated (its mempool) */
	(void) as;
	(void) pi;
	(void) arg;
}

static int lu_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void) as;
	(void) dilap;
	(void) arg;
	return -UNW_ENOINFO;
}

static int lu_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
			 void *arg)
{
	uint64_t v;

	(void) as;
	if (write || !mem_read(arg, addr, &v))
		return -UNW_EINVAL;
	*valp = v;
	return 0;
}

static int lu_access_reg(unw_addr_space_t as, unw_regnum_t regnum, unw_word_t *valp, int write,
			 void *arg)
{
	const struct symbolizer *sym = arg;

	(void) as;
	if (write)
		return -UNW_EREADONLYREG;
	if (regnum < 0 || regnum > UNW_X86_64_RIP)
		return -UNW_EBADREG;
	*valp = sym->cur.regs[sym_dwarf_to_perf[regnum]];
	return 0;
}

static int lu_access_fpreg(unw_addr_space_t as, unw_regnum_t regnum, unw_fpreg_t *val,
			   int write, void *arg)
{
	(void) as;
	(void) regnum;
	(void) val;
	(void) write;
	(void) arg;
	return -UNW_EBADREG;
}

static int lu_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void) as;
	(void) c;
	(void) arg;
	return -UNW_EINVAL;
}

static int lu_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			    unw_word_t *offp, void *arg)
{
	(void) as;
	(void) addr;
	(void) buf;
	(void) len;
	(void) offp;
	(void) arg;
	return -UNW_EINVAL;
}

static const unw_accessors_t lu_accessors_init = {
	.find_proc_info = lu_find_proc_info,
	.put_unwind_info = lu_put_unwind_info,
	.get_dyn_info_list_addr = lu_get_dyn_info_list_addr,
	.access_mem = lu_access_mem,
	.access_reg = lu_access_reg,
	.access_fpreg = lu_access_fpreg,
	.resume = lu_resume,
	.get_proc_name = lu_get_proc_name,
};

bool unwind_have_libunwind(void)
{
	return true;
}

int unwind_init(struct symbolizer *sym)
{
	struct unwind_state *lu = calloc(1, sizeof(*lu));
	unw_accessors_t acc = lu_accessors_init;   /* libunwind copies it */

	if (!lu)
		return -ENOMEM;
	lu->as = unw_create_addr_space(&acc, 0);
	if (!lu->as) {
		free(lu);
		return -ENOMEM;
	}
	(void) unw_set_caching_policy(lu->as, UNW_CACHE_GLOBAL);
	(void) unw_set_cache_size(lu->as, 4096, 0);
	sym->lu = lu;
	return 0;
}

void unwind_release(struct symbolizer *sym)
{
	if (!sym->lu)
		return;
	unw_destroy_addr_space(sym->lu->as);
	free(sym->lu);
	sym->lu = NULL;
}

void unwind_modules_changed(struct symbolizer *sym)
{
	if (sym->lu)
		unw_flush_cache(sym->lu->as, 0, 0);
}

static int unwind_libunwind(struct symbolizer *sym, uint64_t *ret_ips, size_t max,
			    size_t *ret_n)
{
	unw_cursor_t c;
	unw_word_t last_sp = 0;
	size_t n = 0;
	int r;

	*ret_n = 0;
	r = unw_init_remote(&c, sym->lu->as, sym);
	if (r < 0)
		return -EINVAL;
	do {
		unw_word_t ip, sp;

		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		if (unw_get_reg(&c, UNW_REG_SP, &sp) < 0 || (n > 0 && sp <= last_sp))
			break;
		last_sp = sp;
		ret_ips[n++] = ip;
		if (n >= max)
			break;
		r = unw_step(&c);
	} while (r > 0);
	*ret_n = n;
	return 0;
}

#else

bool unwind_have_libunwind(void)
{
	return false;
}

int unwind_init(struct symbolizer *sym)
{
	(void) sym;
	return 0;
}

void unwind_release(struct symbolizer *sym)
{
	(void) sym;
}

void unwind_modules_changed(struct symbolizer *sym)
{
	(void) sym;
}

static int unwind_libunwind(struct symbolizer *sym, uint64_t *ret_ips, size_t max,
			    size_t *ret_n)
{
	return unwind_libdw(sym, ret_ips, max, ret_n);
}

#endif

int symbolizer_unwind(struct symbolizer *sym, const uint64_t *regs, size_t n_regs,
		      const void *stack, size_t stack_size, uint64_t *ret_ips, size_t max,
		      size_t *ret_n)
{
	size_t n = 0;
	int r;

	if (!ret_n)
		return -EINVAL;
	*ret_n = 0;
	if (!regs || n_regs < REGS_USER_N || !ret_ips || max == 0)
		return -EINVAL;
	if (!stack || stack_size == 0)
		return -EINVAL;
	sym->cur = (struct unwind_ctx){
		.regs = regs, .stack = stack, .sp = regs[REGS_SP], .stack_size = stack_size,
	};
	sym->stats.unwinds++;
	if (sym->unwinder == UNWIND_LIBUNWIND)
		r = unwind_libunwind(sym, ret_ips, max, &n);
	else
		r = unwind_libdw(sym, ret_ips, max, &n);
	sym->cur = (struct unwind_ctx){ 0 };
	if (r < 0 || n == 0) {
		sym->stats.unwind_errors++;
		ret_ips[0] = regs[REGS_IP];
		n = 1;
	}
	sym->stats.unwind_frames += n;
	*ret_n = n;
	return 0;
}
