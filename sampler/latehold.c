/* latehold: opts.signal's samples read before their signal's record, held a while.
 *
 * A thread preempted between its counter's overflow and its return to user space gets its
 * SIGTRAP late (25 us - 6 ms under load): the recorder can read the sample from the ring before
 * the handler has made its record. Such a sample, if young, is held here instead of being
 * delivered without its capture: its values are computed as it is read (the last[] totals of
 * its thread stay in order), then the record itself (callchain, regs, stack) is copied into a
 * slot of a pool allocated once. Each drain retries the held samples: one whose record has come
 * goes with it; one older than LATE_HOLD_NS goes without (read late, as before). A new sample of
 * a thread first delivers that thread's held ones, paired or not: the thread could not
 * overflow again before its earlier signal was delivered, and sigcap_take() drops a thread's
 * records older than the sample it pairs. The order of each thread's samples is kept. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "sampler/capture.h"
#include "sampler/sigcapture.h"
#include "sampler/internal.h"

#define LATE_SLOTS 32
#define LATE_SLOT_BYTES 65536           /* a record's size is a u16 */
#define LATE_HOLD_NS 10000000ULL

struct late_entry {
	struct sample smp;              /* values computed; pointers into rec */
	uint64_t period;                /* the sample's own period (what its record carries) */
	unsigned char *rec;             /* the pool's slot */
};

struct late_queue {
	struct late_entry e[LATE_SLOTS]; /* e[head], ... in the order read */
	size_t head, n;
	unsigned char *pool;            /* LATE_SLOTS * LATE_SLOT_BYTES, touched as used */
};

int late_init(struct sampler *s)
{
	struct late_queue *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->pool = malloc((size_t) LATE_SLOTS * LATE_SLOT_BYTES);
	if (!q->pool) {
		free(q);
		return -ENOMEM;
	}
	for (size_t i = 0; i < LATE_SLOTS; i++)
		q->e[i].rec = q->pool + i * LATE_SLOT_BYTES;
	s->late = q;
	return 0;
}

void late_free(struct sampler *s)
{
	if (!s->late)
		return;
	free(s->late->pool);
	free(s->late);
	s->late = NULL;
}

bool late_pair(struct sampler *s, struct sample *smp, uint64_t period)
{
	uint64_t v0 = smp->values[0];
	size_t len;

	/* the record carries the sample's own period, not the weight computed from counts */
	smp->values[0] = period;
	len = sigcap_take(s->sig, smp, s->capture.held, RING_SCRATCH_SIZE);
	if (len) {
		s->capture.held_at = s->capture.held;
		s->capture.held_len = len;
		s->capture.held_tid = 0;        /* paired by sigcap_take() */
		smp->capture = capture_match(s, NULL, smp);
	}
	smp->values[0] = v0;
	return len != 0;
}

/* p, a pointer into the record at from, moved to the same place in the copy at to */
static const void *rebase(const void *p, const void *from, void *to)
{
	return p ? (const unsigned char *) to + ((const unsigned char *) p -
						 (const unsigned char *) from) : NULL;
}

bool late_hold(struct sampler *s, const struct perf_event_header *h, const struct sample *smp,
	       uint64_t period)
{
	struct late_queue *q = s->late;
	struct late_entry *e;

	if (!q || q->n == LATE_SLOTS || clock_now_ns() - smp->time_ns >= LATE_HOLD_NS)
		return false;
	e = &q->e[(q->head + q->n) % LATE_SLOTS];
	memcpy(e->rec, h, h->size);
	e->smp = *smp;
	e->smp.callchain = rebase(smp->callchain, h, e->rec);
	e->smp.regs = rebase(smp->regs, h, e->rec);
	e->smp.stack = rebase(smp->stack, h, e->rec);
	e->period = period;
	q->n++;
	s->stats.signal_held++;
	return true;
}

/* Delivers q's entry i, with its record if that has come (else, unless must_pair, without),
 * and takes it out of the queue: whether it was delivered. */
static bool late_take(struct sampler *s, struct late_queue *q, size_t i, bool must_pair)
{
	struct late_entry *e = &q->e[(q->head + i) % LATE_SLOTS];
	struct sample smp = e->smp;
	unsigned char *rec = e->rec;

	if (late_pair(s, &smp, e->period))
		s->stats.signal_held_paired++;
	else if (must_pair)
		return false;
	/* out of the queue before the callback; smp's pointers stay in rec, a free slot now,
	 * which nothing writes before the next late_hold() */
	for (size_t k = i; k + 1 < q->n; k++)
		q->e[(q->head + k) % LATE_SLOTS] = q->e[(q->head + k + 1) % LATE_SLOTS];
	q->e[(q->head + q->n - 1) % LATE_SLOTS].rec = rec;
	q->n--;
	perf_hand(s, &smp);
	return true;
}

void late_retry(struct sampler *s, pid_t tid, bool all)
{
	struct late_queue *q = s->late;
	uint64_t now = clock_now_ns();

	for (size_t i = 0; q && i < q->n;) {
		const struct late_entry *e = &q->e[(q->head + i) % LATE_SLOTS];
		bool must_pair;

		if (tid && e->smp.tid != tid) {
			i++;
			continue;
		}
		/* young, at a periodic drain: delivered only with its record */
		must_pair = !tid && !all && now - e->smp.time_ns < LATE_HOLD_NS;
		if (!late_take(s, q, i, must_pair))
			i++;
	}
}
