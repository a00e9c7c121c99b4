/*
 * capture_ids: the reader's side of the BPF program's split records (internal.h's
 * capture_split()). A node there holds its code's check, not its code's identity extras: those
 * come, with the code's names, in the node's slot of the names area the first time the
 * records of its ring hold that code (since the last capture_forget()), and only the check
 * after that. The reader keeps each slot it was sent (identity and names) by its check, and
 * tells a sample where each node's lies (struct sample_capture's ident: in the record's names
 * area, or here).
 *
 * The program keys a check by the ring its record goes to, whose records come in their order,
 * so the reader has read every identity a record leaves out, unless the record that carried it
 * was lost, or forgotten twice over since (capture_forget(): the identities of the epoch before
 * the last are kept for the records still on their way). Such a node's identity is none, as
 * where the program's read failed (stats.capture_ids_missed): its code is then checked against
 * the target's memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/internal.h"

#define IDS_MIN 256                     /* entries a table starts with (each a slot) */
#define IDS_MAX (1u << 15)              /* ... and grows to: past 3/4 of it, forgotten */

static void ids_free(struct capture_ids *t)
{
	free(t->keys);
	free(t->bytes);
	*t = (struct capture_ids) { 0 };
}

void capture_ids_forget(struct capture *c)
{
	ids_free(&c->ids[1]);
	c->ids[1] = c->ids[0];
	c->ids[0] = (struct capture_ids) { 0 };
}

void capture_ids_free(struct capture *c)
{
	ids_free(&c->ids[0]);
	ids_free(&c->ids[1]);
}

/* Where check's entry is, or the empty one where it would go (cap a power of two; a check has
 * bit 0 set, never 0). */
static size_t ids_find(const uint64_t *keys, size_t cap, uint64_t check)
{
	size_t i = (size_t) ((check * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);

	while (keys[i] && keys[i] != check)
		i = (i + 1) & (cap - 1);
	return i;
}

/* t at cap entries, its entries kept: 0 or -ENOMEM. */
static int ids_grow(struct capture_ids *t, size_t cap, size_t bytes)
{
	uint64_t *keys = calloc(cap, sizeof(*keys));
	unsigned char *ids = malloc(cap * bytes);

	if (!keys || !ids) {
		free(keys);
		free(ids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->cap; i++) {
		size_t at;

		if (!t->keys[i])
			continue;
		at = ids_find(keys, cap, t->keys[i]);
		keys[at] = t->keys[i];
		memcpy(ids + at * bytes, t->bytes + i * bytes, bytes);
	}
	free(t->keys);
	free(t->bytes);
	*t = (struct capture_ids) { keys, ids, cap, t->n };
	return 0;
}

/* Keeps the identity id (bytes long) under check. A full table forgets them all: the program
 * sends every code again, under a new epoch. */
static void ids_put(struct capture *c, uint64_t check, const unsigned char *id, size_t bytes)
{
	struct capture_ids *t = &c->ids[0];
	size_t at;

	if (t->n + 1 > t->cap / 4 * 3 &&
	    (t->cap >= IDS_MAX || ids_grow(t, t->cap ? 2 * t->cap : IDS_MIN, bytes) < 0)) {
		(void) capture_forget(c);
		if (ids_grow(t, IDS_MIN, bytes) < 0)
			return;
	}
	at = ids_find(t->keys, t->cap, check);
	t->n += !t->keys[at];
	t->keys[at] = check;
	memcpy(t->bytes + at * bytes, id, bytes);
}

static const unsigned char *ids_get(const struct capture *c, uint64_t check, size_t bytes)
{
	for (size_t g = 0; g < 2; g++) {
		const struct capture_ids *t = &c->ids[g];
		size_t at;

		if (!t->cap)
			continue;
		at = ids_find(t->keys, t->cap, check);
		if (t->keys[at])
			return t->bytes + at * bytes;
	}
	return NULL;
}

void capture_idents(struct sampler *s, const unsigned char *nodes, size_t n,
		    const unsigned char *names, size_t n_names, struct sample_capture *out)
{
	struct capture *c = &s->capture;
	const struct sampler_capture_spec *sp = &c->spec;
	size_t body = 8 + sp->node_bytes, ident = capture_ident_bytes(sp);
	size_t stride = capture_node_stride(sp), slot = capture_names_stride(sp);
	uint64_t check;

	/* those sent first (in their slot: only a node with one can be): a table that grows
	 * moves the extras it holds */
	for (size_t k = 0; k < n && k < n_names; k++) {
		memcpy(&check, nodes + k * stride + body, 8);
		if (check & 1) {
			c->ident[k] = names + k * slot;
			ids_put(c, check, c->ident[k], slot);
		}
	}
	/* the others: the slot their check was sent in, names and all (the code cache keeps a
	 * code's names by its address alone: another code there since, and a code with these
	 * identity bytes again, say a module imported anew, had none to be named by) */
	for (size_t k = 0; k < n; k++) {
		memcpy(&check, nodes + k * stride + body, 8);
		if (check & 1) {
			if (k >= n_names)
				c->ident[k] = NULL;     /* sent, but its names area was lost */
			continue;
		}
		/* 0: the tail's (none read) */
		c->ident[k] = check ? ids_get(c, check | 1, slot) : NULL;
		s->stats.capture_ids_missed += check && !c->ident[k];
	}
	out->ident = c->ident;
	out->names = n_names ? names + ident : NULL;
	out->names_stride = slot;
}
