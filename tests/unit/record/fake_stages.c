/*
 * fake_stages: the stages under record/, played from the script in struct fake_world (see
 * fake_stages.h). Each function keeps the contract its real header states, as far as the
 * recorder can tell; what the script does not say is an ordinary, healthy target.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "tests/unit/record/fake_stages.h"

struct fake_world fake;

void fake_world_reset(void)
{
	memset(&fake, 0, sizeof(fake));
}

/* ---- the symbol table -------------------------------------------------------------------- */

struct fake_sym {
	uint64_t addr;
	const char *module, *name;
};

static const struct fake_sym fake_syms[] = {
	{ FAKE_IP_START, FAKE_INTERP_MODULE, "_start" },
	{ FAKE_IP_MAIN, FAKE_INTERP_MODULE, "main" },
	{ FAKE_IP_RUNMAIN, FAKE_INTERP_MODULE, "Py_RunMain" },
	{ FAKE_IP_EVAL, FAKE_INTERP_MODULE, "_PyEval_EvalFrameDefault" },
	{ FAKE_IP_CALL, FAKE_INTERP_MODULE, "PyObject_Call" },
	{ FAKE_IP_DEFLATE, "libz.so.1", "deflate" },
	{ FAKE_IP_NONAME, "libz.so.1", NULL },
	{ FAKE_IP_K_READ, NULL, "ksys_read" },
	{ FAKE_IP_K_SYSCALL, NULL, "entry_SYSCALL_64" },
};

static const struct fake_sym *sym_at(uint64_t addr)
{
	for (size_t i = 0; i < sizeof(fake_syms) / sizeof(fake_syms[0]); i++)
		if (fake_syms[i].addr == addr)
			return &fake_syms[i];
	return NULL;
}

/* ---- pyframes ---------------------------------------------------------------------------- */

struct pyframes {
	size_t image;
	struct pyframes_stats stats;
	char **texts;                   /* the frames' strings: valid until pyframes_free() */
	size_t n_texts;
	bool codes_forgotten;           /* pyframes_codes_forgotten() says so, once */
};

static struct fake_thread *thread_of(size_t image, pid_t tid)
{
	struct fake_image *im = image < fake.n_images ? &fake.images[image] : NULL;

	for (size_t i = 0; im && i < im->n_threads; i++)
		if (im->threads[i].tid == tid)
			return &im->threads[i];
	return NULL;
}

/* "a;b;c" (root first) into frames innermost first, the innermost max kept; the outer ones
 * left out are added to the cut. */
static int stack_parse(struct pyframes *pf, const char *text, struct py_frame *ret, size_t max,
		       size_t *ret_n, struct pyframes_cut *cut)
{
	char *copy = strdup(text), **v, *save = NULL;
	struct py_frame all[64];
	size_t n = 0;

	v = realloc(pf->texts, (pf->n_texts + 1) * sizeof(*v));
	if (!copy || !v) {
		free(copy);
		if (v)
			pf->texts = v;
		return -ENOMEM;
	}
	pf->texts = v;
	pf->texts[pf->n_texts++] = copy;
	for (char *name = strtok_r(copy, ";", &save); name && n < 64;
	     name = strtok_r(NULL, ";", &save), n++)
		all[n] = (struct py_frame) {
			.code = 0x10000 + n, .name = name, .file = "t.py", .line = (int) n + 1,
			.first_line = (int) n + 1, .entry = n == 0,
		};
	*ret_n = n < max ? n : max;
	for (size_t i = 0; i < *ret_n; i++)
		ret[i] = all[n - 1 - i];
	if (cut)
		cut->n += n - *ret_n;
	pf->stats.walks++;
	return 0;
}

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void) ctx, (void) addr, (void) buf, (void) len;
	return -EFAULT;
}

int remote_mem_open_pid(pid_t pid, struct remote_mem *ret)
{
	(void) pid;
	fake.mem_opens++;
	*ret = (struct remote_mem) { .read = fake_read };
	return 0;
}

void remote_mem_close(struct remote_mem *mem)
{
	(void) mem;
	fake.mem_closes++;
}

int pyframes_open(pid_t pid, const struct remote_mem *mem, struct pyframes **ret,
		  struct pyframes_info *ret_info)
{
	struct fake_image *im = fake.image < fake.n_images ? &fake.images[fake.image] : NULL;
	struct pyframes_info info = { 0 };

	(void) pid, (void) mem;
	*ret = NULL;
	fake.pf_opens++;
	if (ret_info)
		*ret_info = info;
	if (!im || im->open_misses) {
		if (im)
			im->open_misses--;
		return -ENOENT;
	}
	if (im->corrupt_opens) {
		im->corrupt_opens--;
		return -EBADMSG;
	}
	snprintf(info.version, sizeof(info.version), "%s", im->version ? im->version : "3.12.1");
	snprintf(info.binary, sizeof(info.binary), "%s", im->binary ? im->binary : "/usr/bin/python3.12");
	(void) sscanf(info.version, "%d.%d.%d", &info.major, &info.minor, &info.micro);
	info.runtime_addr = 0x5000;
	if (ret_info)
		*ret_info = info;
	if (im->open_error)
		return im->open_error;
	*ret = calloc(1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	(*ret)->image = fake.image;
	fake.pf_live++;
	return 0;
}

int pyframes_open_settled(pid_t pid, const struct remote_mem *mem, struct pyframes **ret,
			  struct pyframes_info *ret_info)
{
	return pyframes_open(pid, mem, ret, ret_info);
}

void pyframes_free(struct pyframes *pf)
{
	if (!pf)
		return;
	for (size_t i = 0; i < pf->n_texts; i++)
		free(pf->texts[i]);
	free(pf->texts);
	free(pf);
	fake.pf_live--;
	fake.pf_frees++;
}

void pyframes_set_verify(struct pyframes *pf, bool on)
{
	(void) pf;
	fake.verify = on;
}

int pyframes_thread_stack(struct pyframes *pf, pid_t tid, struct py_frame *ret_frames,
			  size_t max, size_t *ret_n, struct pyframes_cut *ret_cut)
{
	struct fake_thread *t = thread_of(pf->image, tid);
	struct pyframes_cut cut = { 0 };
	int r;

	fake.live_reads++;
	fake.verified_reads += fake.verify;
	*ret_n = 0;
	if (ret_cut)
		*ret_cut = cut;
	if (!t)
		return -ENOENT;
	if (t->torn_reads) {
		t->torn_reads--;
		return -EAGAIN;
	}
	if (t->error)
		return t->error;
	cut = t->cut;
	r = stack_parse(pf, t->stack, ret_frames, max, ret_n, &cut);
	if (r == 0 && ret_cut)
		*ret_cut = cut;
	return r;
}

int pyframes_thread_stack_captured(struct pyframes *pf, const struct pyframes_capture *cap,
				   struct py_frame *ret_frames, size_t max, size_t *ret_n,
				   struct pyframes_cut *ret_cut)
{
	/* the fake sampler's capture: one node, the item itself */
	const struct fake_item *it = (const void *) cap->nodes;
	struct fake_thread *t = thread_of(pf->image, it->tid);
	struct pyframes_cut cut = it->captured_cut;
	int r;

	fake.captured_reads++;
	fake.captured_walk_extras = cap->n_extras;
	pf->codes_forgotten |= it->codes_forgotten;
	*ret_n = 0;
	if (ret_cut)
		*ret_cut = (struct pyframes_cut) { 0 };
	if (cap->n != 1 || !cap->head)
		return -EINVAL;
	r = stack_parse(pf, it->captured ? it->captured : t ? t->stack : "", ret_frames, max, ret_n,
			&cut);
	if (r == 0 && ret_cut)
		*ret_cut = cut;
	return r;
}

int pyframes_thread_state(struct pyframes *pf, pid_t tid, uint64_t *ret_tstate)
{
	struct fake_thread *t = thread_of(pf->image, tid);

	*ret_tstate = t ? t->tstate : 0;
	return *ret_tstate ? 0 : -ENOENT;
}

int pyframes_capture_spec(const struct pyframes *pf, struct pyframes_capture_spec *ret)
{
	(void) pf;
	*ret = (struct pyframes_capture_spec) {
		.head_off1 = 8, .head_off2 = PYFRAMES_NO_OFF, .frame_bytes = 64, .next_off = 8,
		.n_extras = 2,
		.extra = { { .from = 0, .off = 0, .len = 32, .mask = ~0ull },
			   { .from = 8, .off = 16, .len = 32, .mask = ~0ull } },
	};
	return 0;
}

int pyframes_gil_spec(const struct pyframes *pf, uint64_t *ret_addr, uint32_t *ret_locked_off,
		      uint32_t *ret_holder_off)
{
	*ret_addr = 0;
	if (!fake.images[pf->image].gil)
		return -ENOTSUP;
	*ret_addr = FAKE_GIL_AT;
	*ret_locked_off = 16;
	*ret_holder_off = 8;
	return 0;
}

int pyframes_gil(const struct pyframes *pf, struct pyframes_gil *ret)
{
	const struct fake_image *im = &fake.images[pf->image];

	*ret = (struct pyframes_gil) { .known = im->gil, .locked = im->gil_holder != 0,
				       .holder = im->gil_holder };
	return 0;
}

int pyframes_gc_spec(const struct pyframes *pf, uint64_t *ret_addr)
{
	*ret_addr = fake.images[pf->image].gc ? FAKE_GC_AT : 0;
	return *ret_addr ? 0 : -ENOTSUP;
}

int pyframes_gc(const struct pyframes *pf, struct pyframes_gc *ret)
{
	const struct fake_image *im = &fake.images[pf->image];

	fake.gc_reads++;
	*ret = (struct pyframes_gc) { .known = im->gc, .collecting = im->gc && im->gc_collecting };
	return 0;
}

int pyframes_search_spec(struct pyframes *pf, struct pyframes_search_spec *ret)
{
	if (!fake.images[pf->image].searchable)
		return -ENOENT;
	*ret = (struct pyframes_search_spec) {
		.interp_at = 0x5008, .threads_off = 16, .next_off = 8, .tid_off1 = 24,
		.tid_off2 = PYFRAMES_NO_OFF,
	};
	return 0;
}

int pyframes_thread_names(struct pyframes *pf, struct pyframes_thread_name *ret, size_t max,
			  size_t *ret_n)
{
	const struct fake_image *im = &fake.images[pf->image];

	fake.names_reads++;
	*ret_n = 0;
	for (size_t i = 0; i < im->n_threads && *ret_n < max; i++) {
		if (!im->threads[i].name)
			continue;
		ret[*ret_n].tid = im->threads[i].tid;
		snprintf(ret[*ret_n].name, sizeof(ret[*ret_n].name), "%s", im->threads[i].name);
		(*ret_n)++;
	}
	return 0;
}

const struct pyframes_stats *pyframes_stats(const struct pyframes *pf)
{
	return &pf->stats;
}

/* ---- symbolizer -------------------------------------------------------------------------- */

struct symbolizer {
	struct symbolizer_stats stats;
};

int symbolizer_new(pid_t pid, struct symbolizer **ret)
{
	(void) pid;
	*ret = NULL;
	if (fake.sym_failures) {
		fake.sym_failures--;
		return -ESRCH;
	}
	*ret = calloc(1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	fake.sym_news++;
	fake.sym_live++;
	return 0;
}

void symbolizer_free(struct symbolizer *sym)
{
	if (!sym)
		return;
	free(sym);
	fake.sym_live--;
}

int symbolizer_warm(struct symbolizer *sym)
{
	(void) sym;
	fake.sym_warms++;
	return 0;
}

const char *symbolizer_module_name(struct symbolizer *sym, uint64_t addr)
{
	const struct fake_sym *f = sym_at(addr);

	(void) sym;
	return f ? f->module : NULL;
}

int symbolizer_lookup(struct symbolizer *sym, uint64_t addr, bool is_return_addr,
		      struct native_frame *ret, size_t max, size_t *ret_n)
{
	const struct fake_sym *f = sym_at(addr);

	(void) is_return_addr;
	*ret_n = 0;
	if (!f || !f->module || max == 0)
		return -ENOENT;
	sym->stats.lookups++;
	ret[0] = (struct native_frame) {
		.addr = addr, .name = f->name, .module = f->module, .module_offset = addr & 0xfff,
	};
	*ret_n = 1;
	return 0;
}

int symbolizer_lookup_name(struct symbolizer *sym, uint64_t addr, struct native_frame *ret)
{
	size_t n;

	return symbolizer_lookup(sym, addr, false, ret, 1, &n);
}

int symbolizer_unwind(struct symbolizer *sym, const uint64_t *regs, size_t n_regs,
		      const void *stack, size_t stack_size, uint64_t *ret_ips, size_t max,
		      size_t *ret_n)
{
	/* the fake sampler's registers: the item itself */
	const struct fake_item *it = (const void *) (uintptr_t) regs[0];

	(void) stack, (void) stack_size;
	*ret_n = 0;
	if (n_regs < 1)
		return -EINVAL;
	sym->stats.unwinds++;
	fake.unwinds_in_stop += fake.in_stop;
	for (size_t i = 0; i < FAKE_MAX_IPS && i < max && it->native[i]; i++)
		ret_ips[(*ret_n)++] = it->native[i];
	return 0;
}

const char *symbolizer_build_id(const struct symbolizer *sym, const char *module)
{
	(void) sym;
	return module && !strcmp(module, "libz.so.1") ? FAKE_BUILD_ID_LIBZ : NULL;
}

int symbolizer_kernel(struct symbolizer *sym, uint64_t addr, struct native_frame *ret)
{
	const struct fake_sym *f = sym_at(addr);

	(void) sym;
	if (!f || f->module)
		return -ENOENT;
	*ret = (struct native_frame) { .addr = addr, .name = f->name };
	return 0;
}

const struct symbolizer_stats *symbolizer_stats(const struct symbolizer *sym)
{
	return &sym->stats;
}

/* ---- sampler ----------------------------------------------------------------------------- */

struct sampler {
	struct sampler_opts opts;
	struct sampler_stats stats;
	struct sampler_capture_spec spec;
	bool capture_on, brk, stopped;
	int capture_error;
	pid_t pid;
	void (*resumed)(void *ctx);
	uint64_t callchain[FAKE_MAX_IPS + 4];
	uint64_t regs[1];
	unsigned char stack[16];
};

/* the rate of an event that samples on its own: the caller's period, else the run's rate */
void sampler_leader_rate(const struct sampler_opts *o, size_t i, uint64_t *ret_freq,
			 uint64_t *ret_period)
{
	*ret_period = o->events[i].attr.sample_period;
	*ret_freq = *ret_period ? 0 : o->freq;
}

static uint64_t *root_slot(pid_t tid, bool make)
{
	for (size_t i = 0; i < fake.n_roots; i++)
		if (fake.roots_tid[i] == tid)
			return &fake.roots[i];
	if (!make || fake.n_roots == sizeof(fake.roots) / sizeof(fake.roots[0]))
		return NULL;
	fake.roots_tid[fake.n_roots] = tid;
	fake.roots[fake.n_roots] = 0;
	return &fake.roots[fake.n_roots++];
}

static void tell(struct sampler *s, enum sampler_event_kind kind, pid_t tid)
{
	struct sampler_event e = { .kind = kind, .tid = tid, .sampler = s };

	if (s->opts.event_fn)
		s->opts.event_fn(s->opts.event_ctx, &e);
}

int sampler_capture_start(struct sampler *s, const struct sampler_capture_spec *spec)
{
	unsigned k = fake.capture_starts++;
	const struct fake_image *im = &fake.images[fake.image];
	int r = k < FAKE_MAX_STARTS ? fake.capture_errors[k] : 0;

	if (k < FAKE_MAX_STARTS * 2) {
		fake.capture_extras[k] = spec->n_extras;
		fake.capture_search_at[k] = spec->search_at;
		fake.capture_gil_at[k] = spec->gil_at;
		fake.capture_gc_at[k] = spec->gc_at;
	}
	if (!s->opts.capture)
		return -EINVAL;
	if (r < 0)
		return r;
	s->spec = *spec;
	s->capture_on = true;
	/* the program goes on every thread's events: each one's root is asked for */
	for (size_t i = 0; fake.image < fake.n_images && i < im->n_threads; i++)
		tell(s, SAMPLER_EVENT_CAPTURE_THREAD, im->threads[i].tid);
	return 0;
}

int sampler_capture_set_root(struct sampler *s, pid_t tid, uint64_t root)
{
	uint64_t *slot = root_slot(tid, true);

	(void) s;
	if (!slot)
		return -ENOENT;
	*slot = root;
	return 0;
}

int sampler_capture_forget(struct sampler *s)
{
	(void) s;
	fake.capture_forgets++;
	return 0;
}

bool pyframes_codes_forgotten(struct pyframes *pf)
{
	bool r = pf->codes_forgotten;

	pf->codes_forgotten = false;
	return r;
}

int sampler_capture_error(const struct sampler *s)
{
	return s->capture_error;
}

int sampler_capture_probe(void)
{
	return fake.capture_probe;
}

/* the signal mode: refused by default, as where the host has a SIGTRAP handler */
int sampler_signal_probe(void)
{
	return fake.signal_probe ? fake.signal_probe - 1 : -EBUSY;
}

int sampler_new(const struct sampler_opts *opts, struct sampler **ret)
{
	unsigned k = fake.sampler_news++;
	int r = k < FAKE_MAX_STARTS ? fake.start_errors[k] : 0;
	struct sampler *s;

	*ret = NULL;
	fake.last_opts = *opts;
	fake.last_capture_spec = opts->capture_spec != NULL;
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->opts = *opts;
	s->pid = opts->argv ? fake.launch_pid : opts->pid;
	if (opts->capture_spec)
		s->capture_error = sampler_capture_start(s, opts->capture_spec);
	*ret = s;
	return 0;
}

pid_t sampler_pid(const struct sampler *s)
{
	return s->pid;
}

void sampler_break(struct sampler *s)
{
	s->brk = true;
}

void sampler_set_resumed_fn(struct sampler *s, void (*fn)(void *ctx))
{
	s->resumed = fn;
}

int sampler_pause(struct sampler *s)
{
	(void) s;
	return 0;
}

int sampler_resume(struct sampler *s)
{
	(void) s;
	return 0;
}

/* What the capture program would copy at the item's overflow. */
static void capture_of(struct sampler *s, const struct fake_item *it, struct sample_capture *c)
{
	uint64_t *slot = root_slot(it->tid, false);
	struct fake_thread *t = thread_of(fake.image, it->tid);

	*c = (struct sample_capture) { .status = SAMPLE_CAPTURE_NO_ROOT };
	if ((!slot || !*slot) && s->spec.search_at && t && t->tstate) {
		/* the program finds the thread's state itself and keeps it */
		slot = root_slot(it->tid, true);
		if (slot)
			*slot = t->tstate;
	}
	if (!slot || !*slot)
		return;
	*c = (struct sample_capture) {
		.status = it->capture_status, .root = *slot, .head = 1,
		.nodes = (const void *) it, .n = 1, .stride = 8 + s->spec.node_bytes,
		.gil_known = s->spec.gil_at && it->gil != 0, .gil_held = it->gil == 2,
		.gc_known = s->spec.gc_at && it->gc != 0, .gc_collecting = it->gc == 2,
	};
	s->stats.captured++;
}

static void play_sample(struct sampler *s, const struct fake_item *it, sampler_sample_fn fn,
			void *ctx)
{
	struct fake_thread *t = thread_of(fake.image, it->tid);
	struct sample_capture c;
	struct sample smp = {
		.pid = s->pid, .tid = it->tid, .ip = it->ip,
		.time_ns = clock_now_ns() - it->age_ns,
		.n_values = s->opts.n_events, .stopped = it->stopped,
		.user = it->ip < 0xffff800000000000ull,
	};
	size_t n = 0;

	if (t && it->tstate)
		t->tstate = it->tstate;
	if (it->gil_holder_now)
		fake.images[fake.image].gil_holder = it->gil_holder_now == FAKE_GIL_FREE ? 0 :
						     it->gil_holder_now;
	if (it->gc_now)
		fake.images[fake.image].gc_collecting = it->gc_now == 2;
	if (it->gc_placed)
		fake.images[fake.image].gc = true;
	smp.values[0] = it->values[0] ? it->values[0] : 1000;
	for (size_t i = 1; i < SAMPLER_MAX_EVENTS; i++)
		smp.values[i] = it->values[i];
	if (s->opts.kernel_callchain && it->kernel[0]) {
		s->callchain[n++] = (uint64_t) PERF_CONTEXT_KERNEL;
		for (size_t i = 0; i < FAKE_MAX_IPS && it->kernel[i]; i++)
			s->callchain[n++] = it->kernel[i];
		s->callchain[n++] = (uint64_t) PERF_CONTEXT_USER;
		s->callchain[n++] = it->ip;
		smp.callchain = s->callchain;
		smp.n_callchain = n;
	}
	if (s->opts.stack_user_size && it->native[0]) {
		s->regs[0] = (uint64_t) (uintptr_t) it;
		smp.regs = s->regs;
		smp.n_regs = 1;
		smp.stack = s->stack;
		smp.stack_size = sizeof(s->stack);
	}
	if (s->capture_on) {
		capture_of(s, it, &c);
		smp.capture = &c;
	}
	s->stats.samples++;
	fake.in_stop = it->stopped;
	fn(ctx, &smp);
	fake.in_stop = false;
	if (t && it->after)
		t->stack = it->after;
	if (it->stopped && s->resumed)
		s->resumed(ctx);
}

int sampler_run(struct sampler *s, sampler_sample_fn fn, void *ctx, volatile sig_atomic_t *stop,
		uint64_t duration_ns)
{
	(void) duration_ns;
	fake.sampler_runs++;
	while (!*stop && !s->brk && fake.next_item < fake.n_items) {
		const struct fake_item *it = &fake.items[fake.next_item++];

		if (it->kind == FAKE_SLICE) {
			struct fake_image *im = &fake.images[fake.image];

			for (size_t i = 0; it->name_now && i < im->n_threads; i++)
				if (im->threads[i].tid == it->tid)
					im->threads[i].name = strcmp(it->name_now, "-") ? it->name_now : NULL;
			if (it->pause_ns)
				nanosleep(&(struct timespec) { .tv_sec = (time_t) (it->pause_ns / 1000000000),
					  .tv_nsec = (long) (it->pause_ns % 1000000000) }, NULL);
			break;
		}
		if (it->kind == FAKE_EXEC) {
			/* a new image: no roots, no capture program until one is given */
			fake.image++;
			fake.n_roots = 0;
			s->spec.search_at = 0;   /* the old image's addresses */
			s->stats.execs++;
			tell(s, SAMPLER_EVENT_EXEC, s->pid);
			continue;
		}
		play_sample(s, it, fn, ctx);
	}
	s->brk = false;
	if (fake.next_item == fake.n_items)
		s->stats.target_exited = true;
	return 0;
}

void sampler_stop(struct sampler *s)
{
	if (s->stopped)
		return;
	s->stopped = true;
	fake.sampler_stops++;
}

void sampler_wake(struct sampler *s)
{
	(void) s;
}

void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	sampler_stop(s);
	free(s);
	fake.sampler_frees++;
}

const struct sampler_stats *sampler_stats(const struct sampler *s)
{
	return &s->stats;
}

/* ---- sampler/stop.h: the snapshot's stops (not used by the recorder) --------------------- */

#include "sampler/stop.h"

int stop_begin(pid_t pid, const pid_t *tids, size_t n, bool native, bool hold_signals,
	       stop_restarts_fn restarts, struct stop **ret, pid_t *ret_tracer)
{
	(void) pid, (void) tids, (void) n, (void) native, (void) hold_signals, (void) restarts;
	*ret = NULL;
	*ret_tracer = 0;
	return -ENOSYS;
}

const struct stopped_thread *stop_thread(const struct stop *st, size_t i)
{
	(void) st, (void) i;
	return NULL;
}

uint64_t stop_end(struct stop *st)
{
	(void) st;
	return 0;
}

void stop_free(struct stop *st)
{
	(void) st;
}

const struct pyframes_info *pyframes_info(const struct pyframes *pf)
{
	static const struct pyframes_info none;

	(void) pf;
	return &none;
}
