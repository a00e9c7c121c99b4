#include "output/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/strpool.h"

/* Open-addressing table of uint32 ids, keyed by a hash the caller gives. A slot holds the id in
 * its low half and the high half of the id's hash above, so that probing rarely looks at an
 * entry that does not match; SLOT_EMPTY (id UINT32_MAX, which no entry has) when free. */
struct idtab {
	uint64_t *slots;
	size_t cap;     /* power of two */
	size_t used;
};

#define SLOT_EMPTY UINT64_MAX

static uint64_t slot_of(uint64_t h, uint32_t id)
{
	return (h >> 32) << 32 | id;
}

struct frame_rec {
	struct profile_frame f;
	uint64_t hash;
};

struct stack_rec {
	struct profile_stack s;
	uint64_t hash;
};

struct build_id {
	const char *module, *hex;
};

struct profile {
	size_t n_events;
	struct profile_event events[PROFILE_MAX_EVENTS];
	struct profile_meta meta;

	/* strings: each interned once */
	struct strpool strs;

	struct frame_rec *frames;
	size_t n_frames, cap_frames;
	struct idtab frame_tab;

	struct stack_rec *stacks;
	size_t n_stacks, cap_stacks;
	size_t last_stack;      /* the stack of the last profile_add() */
	struct idtab stack_tab;
	uint64_t *values;       /* n_stacks * (n_events + 1) */

	struct build_id *bids;  /* interned module and build-id */
	size_t n_bids, cap_bids;

	/* the time-ordered log (profile_log_start) */
	bool log_on, log_cut;
	size_t log_max;         /* entries that fit the bytes asked for */
	size_t n_log, cap_log;
	uint32_t *log_stack;
	uint64_t *log_time;
	uint64_t *log_values;   /* n_log * n_events */

	struct thread_name_rec {
		uint32_t tid;
		const char *name;
	} *tnames;
	size_t n_tnames, cap_tnames;
};

/* Finds the slot for hash h where eq(id) holds, or the empty slot where it would go. */
static size_t idtab_probe(const struct idtab *t, uint64_t h, const struct profile *p,
			  bool (*eq)(const struct profile *, uint32_t, const void *), const void *key)
{
	size_t mask = t->cap - 1, i = h & mask;

	for (;;) {
		uint64_t s = t->slots[i];
		if (s == SLOT_EMPTY || ((s >> 32) == (h >> 32) && eq(p, (uint32_t) s, key)))
			return i;
		i = (i + 1) & mask;
	}
}

static int idtab_reserve(struct idtab *t, size_t n, uint64_t (*hash_id)(const struct profile *, uint32_t),
			 const struct profile *p)
{
	size_t ncap = t->cap ? t->cap : 256;
	uint64_t *slots;

	if ((n + 1) * 4 <= t->cap * 3)
		return 0;
	while ((n + 1) * 4 > ncap * 3)
		ncap *= 2;
	slots = malloc(ncap * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, ncap * sizeof(*slots));
	for (size_t i = 0; i < t->cap; i++) {
		uint64_t s = t->slots[i];
		size_t j;
		if (s == SLOT_EMPTY)
			continue;
		j = hash_id(p, (uint32_t) s) & (ncap - 1);
		while (slots[j] != SLOT_EMPTY)
			j = (j + 1) & (ncap - 1);
		slots[j] = s;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = ncap;
	return 0;
}

/* ---- strings ---- */

static int intern(struct profile *p, const char *s, const char **ret)
{
	*ret = s ? strpool_intern(&p->strs, s, strlen(s)) : NULL;
	return s && !*ret ? -ENOMEM : 0;
}

/* ---- frames: strings are interned, so pointer equality is string equality ---- */

static uint64_t frame_hash_of(const struct profile_frame *f)
{
	uint64_t k[5] = { (uint64_t) f->kind, (uintptr_t) f->name, (uintptr_t) f->file,
			  (uint64_t) (int64_t) f->line, (uintptr_t) f->module };
	return hash_mem(k, sizeof(k), 1);
}

static uint64_t frame_hash_id(const struct profile *p, uint32_t id)
{
	return p->frames[id].hash;
}

static bool frame_eq(const struct profile *p, uint32_t id, const void *key)
{
	const struct profile_frame *a = &p->frames[id].f, *b = key;

	return a->kind == b->kind && a->name == b->name && a->file == b->file &&
	       a->line == b->line && a->module == b->module;
}

int profile_frame_id(struct profile *p, const struct profile_frame *f, uint32_t *ret_id)
{
	struct profile_frame key = { .kind = f->kind, .line = f->line };
	uint64_t h;
	size_t slot;
	int r;

	if (!f->name)
		return -EINVAL;
	if ((r = intern(p, f->name, &key.name)) < 0 || (r = intern(p, f->file, &key.file)) < 0 ||
	    (r = intern(p, f->module, &key.module)) < 0)
		return r;
	r = idtab_reserve(&p->frame_tab, p->n_frames + 1, frame_hash_id, p);
	if (r < 0)
		return r;
	h = frame_hash_of(&key);
	slot = idtab_probe(&p->frame_tab, h, p, frame_eq, &key);
	if (p->frame_tab.slots[slot] != SLOT_EMPTY) {
		*ret_id = (uint32_t) p->frame_tab.slots[slot];
		return 0;
	}
	if (p->n_frames >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((r = array_grow((void **) &p->frames, &p->cap_frames, p->n_frames + 1,
			      sizeof(*p->frames), 64)) < 0)
		return r;
	p->frames[p->n_frames].f = key;
	p->frames[p->n_frames].hash = h;
	p->frame_tab.slots[slot] = slot_of(h, (uint32_t) p->n_frames);
	p->frame_tab.used++;
	*ret_id = (uint32_t) p->n_frames++;
	return 0;
}

size_t profile_n_frames(const struct profile *p)
{
	return p->n_frames;
}

const struct profile_frame *profile_frame(const struct profile *p, uint32_t id)
{
	return id < p->n_frames ? &p->frames[id].f : NULL;
}

/* ---- stacks ---- */

struct stack_key {
	uint32_t tid;
	const uint32_t *frames;
	size_t depth;
};

static uint64_t stack_hash_of(uint32_t tid, const uint32_t *frames, size_t depth)
{
	return hash_mem(frames, depth * sizeof(*frames), tid);
}

static uint64_t stack_hash_id(const struct profile *p, uint32_t id)
{
	return p->stacks[id].hash;
}

static bool stack_eq(const struct profile *p, uint32_t id, const void *key)
{
	const struct profile_stack *a = &p->stacks[id].s;
	const struct stack_key *b = key;

	return a->tid == b->tid && a->depth == b->depth &&
	       memcmp(a->frames, b->frames, b->depth * sizeof(*b->frames)) == 0;
}

int profile_add(struct profile *p, uint32_t tid, const uint32_t *frames, size_t depth,
		const uint64_t *values)
{
	struct stack_key key = { tid, frames, depth };
	size_t nv = p->n_events + 1, slot, id;
	uint64_t h;
	uint32_t *copy;
	int r;

	if (depth == 0 || depth > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < depth; i++)
		if (frames[i] >= p->n_frames)
			return -EINVAL;
	r = idtab_reserve(&p->stack_tab, p->n_stacks + 1, stack_hash_id, p);
	if (r < 0)
		return r;
	h = stack_hash_of(tid, frames, depth);
	slot = idtab_probe(&p->stack_tab, h, p, stack_eq, &key);
	id = (uint32_t) p->stack_tab.slots[slot];
	if (id == UINT32_MAX) {
		if (p->n_stacks >= UINT32_MAX - 1)
			return -ENOMEM;
		if (p->n_stacks + 1 > p->cap_stacks) {
			/* stacks and values share cap_stacks: it moves once both have grown */
			size_t cap_st = p->cap_stacks, cap_v = p->cap_stacks;

			if (array_grow((void **) &p->stacks, &cap_st, p->n_stacks + 1,
				       sizeof(*p->stacks), 64) < 0 ||
			    array_grow((void **) &p->values, &cap_v, p->n_stacks + 1,
				       nv * sizeof(*p->values), 64) < 0)
				return -ENOMEM;
			p->cap_stacks = cap_st;
		}
		copy = malloc(depth * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, frames, depth * sizeof(*copy));
		id = p->n_stacks++;
		p->stacks[id].s = (struct profile_stack) { tid, (uint32_t) depth, copy };
		p->stacks[id].hash = h;
		memset(&p->values[id * nv], 0, nv * sizeof(*p->values));
		p->stack_tab.slots[slot] = slot_of(h, (uint32_t) id);
		p->stack_tab.used++;
	}
	for (size_t i = 0; i < nv; i++)
		p->values[id * nv + i] += values[i];
	p->last_stack = id;
	return 0;
}

int profile_log_start(struct profile *p, size_t max_bytes)
{
	p->log_on = true;
	p->log_cut = false;
	p->log_max = max_bytes / (4 + 8 + 8 * p->n_events);
	return 0;
}

static int log_grow(struct profile *p)
{
	size_t cap = p->cap_log ? p->cap_log * 2 : 1024, ne = p->n_events;
	uint32_t *st;
	uint64_t *t, *v;

	if (cap > p->log_max)
		cap = p->log_max;
	if (cap <= p->n_log)
		return -ENOSPC;
	st = realloc(p->log_stack, cap * sizeof(*st));
	if (!st)
		return -ENOMEM;
	p->log_stack = st;
	t = realloc(p->log_time, cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	p->log_time = t;
	v = realloc(p->log_values, cap * ne * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->log_values = v;
	p->cap_log = cap;
	return 0;
}

int profile_add_at(struct profile *p, uint32_t tid, const uint32_t *frames, size_t depth,
		   const uint64_t *values, uint64_t time_ns)
{
	int r = profile_add(p, tid, frames, depth, values);

	if (r < 0 || !p->log_on || p->log_cut)
		return r;
	if (p->n_log == p->cap_log && log_grow(p) < 0) {
		p->log_cut = true;   /* the stacks still hold this sample */
		return 0;
	}
	p->log_stack[p->n_log] = (uint32_t) p->last_stack;
	p->log_time[p->n_log] = time_ns;
	memcpy(&p->log_values[p->n_log * p->n_events], values + 1, p->n_events * sizeof(*values));
	p->n_log++;
	return 0;
}

bool profile_log_complete(const struct profile *p)
{
	return p->log_on && !p->log_cut;
}

size_t profile_log_len(const struct profile *p)
{
	return profile_log_complete(p) ? p->n_log : 0;
}

size_t profile_log_stack(const struct profile *p, size_t i)
{
	return i < p->n_log ? p->log_stack[i] : SIZE_MAX;
}

uint64_t profile_log_time(const struct profile *p, size_t i)
{
	return i < p->n_log ? p->log_time[i] : 0;
}

const uint64_t *profile_log_values(const struct profile *p, size_t i)
{
	return i < p->n_log ? &p->log_values[i * p->n_events] : NULL;
}

/* ---- thread names ---- */

int profile_set_thread_name(struct profile *p, uint32_t tid, const char *name)
{
	const char *s;
	int r = intern(p, name, &s);

	if (r < 0)
		return r;
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < p->n_tnames; i++) {
		if (p->tnames[i].tid == tid) {
			p->tnames[i].name = s;
			return 0;
		}
	}
	r = array_grow((void **) &p->tnames, &p->cap_tnames, p->n_tnames + 1, sizeof(*p->tnames), 64);
	if (r < 0)
		return r;
	p->tnames[p->n_tnames++] = (struct thread_name_rec) { tid, s };
	return 0;
}

const char *profile_thread_name(const struct profile *p, uint32_t tid)
{
	for (size_t i = 0; i < p->n_tnames; i++)
		if (p->tnames[i].tid == tid)
			return p->tnames[i].name;
	return NULL;
}

int profile_frame_rename(struct profile *p, uint32_t id, const char *name)
{
	struct profile_frame key;
	uint64_t h;
	size_t slot;
	int r;

	if (id >= p->n_frames || !name)
		return -EINVAL;
	key = p->frames[id].f;
	r = intern(p, name, &key.name);
	if (r < 0)
		return r;
	if (key.name == p->frames[id].f.name)
		return 0;
	h = frame_hash_of(&key);
	if (p->frame_tab.slots[idtab_probe(&p->frame_tab, h, p, frame_eq, &key)] != SLOT_EMPTY)
		return -EEXIST;
	p->frames[id].f = key;
	p->frames[id].hash = h;
	/* the table again, every frame at its slot for its (new) hash */
	memset(p->frame_tab.slots, 0xff, p->frame_tab.cap * sizeof(*p->frame_tab.slots));
	for (size_t i = 0; i < p->n_frames; i++) {
		slot = idtab_probe(&p->frame_tab, p->frames[i].hash, p, frame_eq, &p->frames[i].f);
		p->frame_tab.slots[slot] = slot_of(p->frames[i].hash, (uint32_t) i);
	}
	return 0;
}

size_t profile_n_stacks(const struct profile *p)
{
	return p->n_stacks;
}

const struct profile_stack *profile_stack(const struct profile *p, size_t i)
{
	return i < p->n_stacks ? &p->stacks[i].s : NULL;
}

const uint64_t *profile_values(const struct profile *p, size_t i)
{
	return i < p->n_stacks ? &p->values[i * (p->n_events + 1)] : NULL;
}

uint64_t profile_total(const struct profile *p, size_t col)
{
	size_t nv = p->n_events + 1;
	uint64_t sum = 0;

	if (col >= nv)
		return 0;
	for (size_t i = 0; i < p->n_stacks; i++)
		sum += p->values[i * nv + col];
	return sum;
}

/* ---- the rest ---- */

struct profile *profile_new(const char *const *event_names, size_t n_events)
{
	struct profile *p;

	if (n_events == 0 || n_events > PROFILE_MAX_EVENTS)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->n_events = n_events;
	for (size_t i = 0; i < n_events; i++) {
		if (intern(p, event_names[i], &p->events[i].name) < 0) {
			profile_free(p);
			return NULL;
		}
	}
	p->events[0].sampling = true;
	return p;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	strpool_release(&p->strs);
	free(p->frames);
	free(p->frame_tab.slots);
	for (size_t i = 0; i < p->n_stacks; i++)
		free((void *) p->stacks[i].s.frames);
	free(p->stacks);
	free(p->stack_tab.slots);
	free(p->values);
	free(p->bids);
	free(p->log_stack);
	free(p->log_time);
	free(p->log_values);
	free(p->tnames);
	free(p);
}

size_t profile_n_events(const struct profile *p)
{
	return p->n_events;
}

size_t profile_n_values(const struct profile *p)
{
	return p->n_events + 1;
}

const struct profile_event *profile_event(const struct profile *p, size_t i)
{
	return i < p->n_events ? &p->events[i] : NULL;
}

int profile_set_event_rate(struct profile *p, size_t i, uint64_t freq, uint64_t period, bool sampling)
{
	if (i >= p->n_events)
		return -EINVAL;
	p->events[i].freq = freq;
	p->events[i].period = period;
	p->events[i].sampling = sampling;
	return 0;
}

int profile_set_event_name(struct profile *p, size_t i, const char *name)
{
	if (i >= p->n_events || profile_n_stacks(p))
		return -EINVAL;
	return intern(p, name, &p->events[i].name);
}

int profile_set_target(struct profile *p, const char *target)
{
	return intern(p, target, &p->meta.target);
}

int profile_set_python(struct profile *p, const char *version)
{
	return intern(p, version, &p->meta.python);
}

int profile_set_threads_missed(struct profile *p, uint64_t n, const char *why)
{
	p->meta.threads_missed = n;
	return intern(p, why, &p->meta.threads_missed_why);
}

struct profile_meta *profile_meta(struct profile *p)
{
	return &p->meta;
}

const struct profile_meta *profile_meta_const(const struct profile *p)
{
	return &p->meta;
}

int profile_find_event(const struct profile *p, const char *name)
{
	size_t len = strcspn(name, ":");

	for (size_t i = 0; i < p->n_events; i++)
		if (strcmp(p->events[i].name, name) == 0)
			return (int) i;
	for (size_t i = 0; i < p->n_events; i++)
		if (strncmp(p->events[i].name, name, len) == 0 &&
		    (p->events[i].name[len] == '\0' || p->events[i].name[len] == ':'))
			return (int) i;
	return -ENOENT;
}

/* ---- build-ids ---- */

/* The interned copy of s, or NULL when s was never interned. */
static const char *interned(const struct profile *p, const char *s)
{
	return strpool_find(&p->strs, s, strlen(s));
}

int profile_set_build_id(struct profile *p, const char *module, const char *build_id_hex)
{
	char lower[PROFILE_MAX_BUILD_ID + 1];
	size_t n = build_id_hex ? strlen(build_id_hex) : 0;
	const char *m, *hex;
	int r;

	if (!module || !*module || n < 2 || n > PROFILE_MAX_BUILD_ID || n % 2)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = build_id_hex[i];

		if (c >= 'A' && c <= 'F')
			c = (char) (c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -EINVAL;
		lower[i] = c;
	}
	lower[n] = '\0';
	if ((r = array_grow((void **) &p->bids, &p->cap_bids, p->n_bids + 1, sizeof(*p->bids), 64)) < 0 ||
	    (r = intern(p, module, &m)) < 0 || (r = intern(p, lower, &hex)) < 0)
		return r;
	for (size_t i = 0; i < p->n_bids; i++) {
		if (p->bids[i].module == m) {
			p->bids[i].hex = hex;
			return 0;
		}
	}
	p->bids[p->n_bids++] = (struct build_id) { m, hex };
	return 0;
}

void profile_drop_build_id(struct profile *p, const char *module)
{
	const char *m = module ? interned(p, module) : NULL;

	for (size_t i = 0; m && i < p->n_bids; i++)
		if (p->bids[i].module == m) {
			memmove(&p->bids[i], &p->bids[i + 1], (p->n_bids - i - 1) * sizeof(*p->bids));
			p->n_bids--;
			return;
		}
}

const char *profile_build_id(const struct profile *p, const char *module)
{
	const char *m = module ? interned(p, module) : NULL;

	for (size_t i = 0; m && i < p->n_bids; i++)
		if (p->bids[i].module == m)
			return p->bids[i].hex;
	return NULL;
}

size_t profile_n_build_ids(const struct profile *p)
{
	return p->n_bids;
}

const char *profile_build_id_at(const struct profile *p, size_t i, const char **ret_module)
{
	if (i >= p->n_bids)
		return NULL;
	if (ret_module)
		*ret_module = p->bids[i].module;
	return p->bids[i].hex;
}

enum frame_kind profile_bracket_kind(const char *name, size_t n)
{
	if (!strncmp(name, "[thread ", 8) || !strncmp(name, "[process ", 9))
		return FRAME_THREAD;
	if ((n > 8 && !strncmp(name, "[wait: ", 7)) || (n == 11 && !strncmp(name, "[preempted]", 11)))
		return FRAME_WAIT;
	if (strcspn(name + 1, " []") == n - 2)
		return FRAME_SPECIAL;
	return FRAME_NATIVE;
}

enum profile_unit profile_event_unit(const char *event)
{
	static const struct {
		const char *name;
		enum profile_unit unit;
	} times[] = {
		{ "cpu-clock", PROFILE_UNIT_CPU_NS }, { "task-clock", PROFILE_UNIT_CPU_NS },
		{ "off-cpu", PROFILE_UNIT_OFF_CPU_NS }, { "wall", PROFILE_UNIT_WALL_NS },
	};
	size_t len = strcspn(event, ":");

	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
		if (len == strlen(times[i].name) && !strncmp(event, times[i].name, len))
			return times[i].unit;
	return PROFILE_UNIT_COUNT;
}

const char *profile_unit_words(enum profile_unit u)
{
	switch (u) {
	case PROFILE_UNIT_CPU_NS: return "of CPU";
	case PROFILE_UNIT_OFF_CPU_NS: return "off the CPU";
	case PROFILE_UNIT_WALL_NS: return "of wall time";
	case PROFILE_UNIT_COUNT: break;
	}
	return "";
}

bool profile_event_is_time(const char *event)
{
	return profile_event_unit(event) != PROFILE_UNIT_COUNT;
}
