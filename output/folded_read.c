/* folded_read: `frame;frame;...;leaf COUNT` lines from any collapser into a profile. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/buf.h"
#include "base/hash.h"
#include "output/output.h"

#define CHUNK_SIZE 65536
#define SEEN_MAX_TEXT (64u << 20)       /* bytes of frame texts the seen cache keeps at most */

/* Frame texts seen before and the frame id each gave: a text is parsed and interned once, then
 * found here (parsing depends on the text alone, so this gives the same ids). */
struct seen_slot {
	uint64_t hash;
	size_t off;             /* into seen.text */
	uint32_t len;           /* 0: an empty slot (frame texts are never empty) */
	uint32_t id;
};

struct seen {
	struct buf text;
	struct seen_slot *slots;
	size_t n, n_slots;      /* n_slots: a power of two, over twice n */
};

struct reader {
	FILE *in;
	char *chunk;            /* CHUNK_SIZE bytes read ahead */
	size_t pos, len;
	bool eof;
	struct buf line;        /* the current line, without its '\n' */
	struct buf name;        /* a frame's name built while reading the line */
	uint32_t *ids;          /* frame ids of the current line */
	size_t cap_ids;
	uint64_t total;         /* counts read so far, plus what p held before */
	bool stacks_seen;       /* a stack line was read: a header line comes before any */
	struct seen seen;
};

/* The slot of text t[0..n) with hash h: where it is, or the empty slot where it would go. */
static struct seen_slot *seen_find(const struct seen *c, const char *t, size_t n, uint64_t h)
{
	size_t mask = c->n_slots - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct seen_slot *sl = &c->slots[i];

		if (sl->len == 0 || (sl->hash == h && sl->len == n &&
				     memcmp(c->text.data + sl->off, t, n) == 0))
			return sl;
	}
}

/* Makes room for one more slot: false when memory is short (the cache is only a shortcut:
 * texts are then parsed each time). */
static bool seen_reserve(struct seen *c)
{
	size_t n_slots = c->n_slots ? c->n_slots * 2 : 4096;
	struct seen_slot *slots;

	if ((c->n + 1) * 2 <= c->n_slots)
		return true;
	slots = calloc(n_slots, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < c->n_slots; i++) {
		size_t j = c->slots[i].hash & (n_slots - 1);

		if (!c->slots[i].len)
			continue;
		while (slots[j].len)
			j = (j + 1) & (n_slots - 1);
		slots[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = slots;
	c->n_slots = n_slots;
	return true;
}

/* Reads the next line into r->line: 1, or 0 at the end of the input, -E2BIG for a line over
 * FOLDED_READ_MAX_LINE bytes, -errno on a read error. */
static int reader_next(struct reader *r)
{
	bool any = false;

	buf_reset(&r->line);
	for (;;) {
		const char *start, *nl;
		size_t n;
		int e;

		if (r->pos == r->len) {
			if (r->eof)
				return any;
			errno = 0;
			r->len = fread(r->chunk, 1, CHUNK_SIZE, r->in);
			r->pos = 0;
			if (r->len == 0) {
				if (ferror(r->in)) {
					e = errno;
					return e ? -e : -EIO;
				}
				r->eof = true;
				return any;
			}
		}
		any = true;
		start = r->chunk + r->pos;
		nl = memchr(start, '\n', r->len - r->pos);
		n = nl ? (size_t) (nl - start) : r->len - r->pos;
		if (r->line.len + n > FOLDED_READ_MAX_LINE)
			return -E2BIG;
		if (buf_append(&r->line, start, n) < 0)
			return -ENOMEM;
		r->pos += n + (nl ? 1 : 0);
		if (nl)
			return 1;
	}
}

/* Index of the `open` that matches the `close` at t[n - 1], or SIZE_MAX. */
static size_t match_open(const char *t, size_t n, char open, char close)
{
	size_t depth = 0;

	for (size_t i = n; i-- > 0;) {
		if (t[i] == close)
			depth++;
		else if (t[i] == open && --depth == 0)
			return i;
	}
	return SIZE_MAX;
}

/* A line number as folded_frame_text() writes it: 1..INT_MAX, no sign, no leading zero. */
static bool parse_line_number(const char *s, int *ret_line)
{
	long v = 0;

	if (*s < '1' || *s > '9')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return false;
	}
	*ret_line = (int) v;
	return true;
}

/* Types the frame text t[0..n) (n > 0, NUL-terminated, cut up in place) as the header says. */
static void frame_parse(char *t, size_t n, struct profile_frame *f)
{
	size_t open;

	*f = (struct profile_frame) { .kind = FRAME_NATIVE, .name = t };
	if (n >= 2 && t[0] == '[' && t[n - 1] == ']') {
		f->kind = profile_bracket_kind(t, n);
		if (f->kind != FRAME_NATIVE)
			return;
	}
	if (n >= 4 && memcmp(t + n - 4, "_[k]", 4) == 0) {
		t[n - 4] = '\0';
		f->kind = FRAME_KERNEL;
		return;
	}
	if (t[n - 1] == ']') {
		open = match_open(t, n, '[', ']');
		if (open == SIZE_MAX || open == 0 || t[open - 1] != ' ')
			return;
		t[open - 1] = '\0';
		t[n - 1] = '\0';
		f->module = t + open + 1;
	} else if (t[n - 1] == ')') {
		char *colon;

		open = match_open(t, n, '(', ')');
		if (open == SIZE_MAX || open == 0 || t[open - 1] != ' ')
			return;
		t[open - 1] = '\0';
		t[n - 1] = '\0';
		f->kind = FRAME_PYTHON;
		f->file = t + open + 1;
		colon = strrchr(t + open + 1, ':');
		if (colon && parse_line_number(colon + 1, &f->line))
			*colon = '\0';
	}
}

/* austin's frames: `P<pid>;T<thread>;file:function:line;...`. True if s starts so. */
static bool austin_line(const char *s)
{
	size_t n = strspn(s + 1, "0123456789");

	return s[0] == 'P' && n > 0 && s[1 + n] == ';' && s[2 + n] == 'T' &&
	       s[3 + n] != ';' && s[3 + n] != '\0' && s[3 + n] != ' ';
}

/* An austin frame: `file:function:line` (line 0: unknown), else typed as any other. */
static void austin_frame_parse(char *t, size_t n, struct profile_frame *f)
{
	char *c2 = memrchr(t, ':', n), *c1;
	int line = 0;

	if (c2 && c2 > t && (strcmp(c2 + 1, "0") == 0 || parse_line_number(c2 + 1, &line)) &&
	    (c1 = memrchr(t, ':', (size_t) (c2 - t))) && c1 > t && c1 + 1 < c2) {
		*c1 = *c2 = '\0';
		*f = (struct profile_frame) { .kind = FRAME_PYTHON, .name = c1 + 1, .file = t,
					      .line = line };
		return;
	}
	frame_parse(t, n, f);
}

/* Digits only, at most UINT64_MAX: 0, -EINVAL or -EOVERFLOW. */
static int parse_count(const char *s, size_t n, uint64_t *ret, const char **ret_reason)
{
	uint64_t v = 0;

	if (n == 0) {
		*ret_reason = "no count after the last space";
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned char) s[i] - '0';
		if (d > 9) {
			*ret_reason = "count is not a non-negative integer";
			return -EINVAL;
		}
		if (v > (UINT64_MAX - d) / 10) {
			*ret_reason = "count does not fit in 64 bits";
			return -EOVERFLOW;
		}
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	return true;
}

/* A header line as folded_write() writes it, `# hwspy event=NAME duration_ns=N` (either part
 * may be missing), before any stack: the event names p's one event, where p was made for a
 * folded file (its event "samples", no stacks yet); the duration fills an unknown one. Any other
 * comment, or a malformed part of this one, is skipped as a comment. */
static void header_read(struct profile *p, const char *s, size_t len)
{
	static const char tag[] = "# hwspy ";
	char ev[FOLDED_EVENT_MAX + 1] = "";
	uint64_t ns = 0;

	if (len < sizeof(tag) - 1 || memcmp(s, tag, sizeof(tag) - 1))
		return;
	for (size_t i = sizeof(tag) - 1; i < len;) {
		size_t n = 0;

		while (i + n < len && s[i + n] != ' ')
			n++;
		if (n > 6 && n - 6 <= FOLDED_EVENT_MAX && !memcmp(s + i, "event=", 6)) {
			memcpy(ev, s + i + 6, n - 6);
			ev[n - 6] = '\0';
		} else if (n > 12 && n - 12 <= 20 && !memcmp(s + i, "duration_ns=", 12)) {
			ns = 0;
			for (size_t k = i + 12; k < i + n; k++) {
				if (!isdigit((unsigned char) s[k]) || ns > (UINT64_MAX - 9) / 10) {
					ns = 0;         /* not a number of nanoseconds */
					break;
				}
				ns = ns * 10 + (uint64_t) (s[k] - '0');
			}
		}
		i += n + 1;
	}
	for (size_t k = 0; ev[k]; k++)
		if (!isgraph((unsigned char) ev[k]) || ev[k] == ';')
			ev[0] = '\0';
	if (ev[0] && profile_n_events(p) == 1 && !strcmp(profile_event(p, 0)->name, "samples"))
		(void) profile_set_event_name(p, 0, ev);        /* not with stacks: kept */
	if (ns && !profile_meta(p)->duration_ns)
		profile_meta(p)->duration_ns = ns;
}

/* Parses r->line (number lineno) into p: 0 (also for skipped lines) or -errno, *ret_reason set. */
static int line_add(struct reader *r, struct profile *p, uint64_t lineno, const char **ret_reason)
{
	char *s = r->line.data, *sp, *frame;
	size_t len = r->line.len, depth = 0;
	uint64_t count, values[PROFILE_MAX_EVENTS + 1] = { 0 };
	bool austin;
	int ret;

	if (lineno == 1 && len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
		s += 3;
		len -= 3;
	}
	if (len > 0 && s[len - 1] == '\r')
		s[--len] = '\0';
	if (len > 0 && s[0] == '#' && !r->stacks_seen)
		header_read(p, s, len);
	if (len == 0 || s[0] == '#' || blank(s, len))
		return 0;
	r->stacks_seen = true;
	if (memchr(s, '\0', len)) {
		*ret_reason = "NUL byte in the line";
		return -EINVAL;
	}
	sp = memrchr(s, ' ', len);
	if (!sp) {
		*ret_reason = "no space before a count";
		return -EINVAL;
	}
	ret = parse_count(sp + 1, len - (size_t) (sp + 1 - s), &count, ret_reason);
	if (ret < 0)
		return ret;
	if (sp == s) {
		*ret_reason = "no frames before the count";
		return -EINVAL;
	}
	if (count > UINT64_MAX - r->total) {
		*ret_reason = "counts add up past 64 bits";
		return -EOVERFLOW;
	}
	*sp = '\0';
	austin = austin_line(s);
	if (austin) {
		/* the process is left out, the thread is a thread frame "[thread ID]" */
		char *t = strchr(s, ';') + 1, *semi = strchr(t, ';');
		struct profile_frame f = { .kind = FRAME_THREAD };

		if (semi)
			*semi = '\0';
		t[0] = ' ';
		if (buf_printf(&r->name, "[thread%s]", t) < 0)
			return -ENOMEM;
		f.name = r->name.data;
		ret = profile_frame_id(p, &f, &r->ids[depth++]);
		buf_reset(&r->name);
		if (ret < 0)
			return ret;
		s = semi ? semi + 1 : NULL;
	}
	for (frame = s; frame; depth++) {
		char *semi = memchr(frame, ';', (size_t) (sp - frame));
		struct seen_slot *sl = NULL;
		struct profile_frame f;
		size_t n;
		uint64_t h = 0;

		if (semi)
			*semi = '\0';
		n = (size_t) ((semi ? semi : sp) - frame);
		if (n == 0) {
			*ret_reason = "empty frame";
			return -EINVAL;
		}
		if (depth == FOLDED_READ_MAX_FRAMES) {
			*ret_reason = "too many frames";
			return -E2BIG;
		}
		if (array_grow((void **) &r->ids, &r->cap_ids, depth + 1, sizeof(*r->ids), 64) < 0)
			return -ENOMEM;
		if (!austin && seen_reserve(&r->seen)) {
			h = hash_mem(frame, n, 0);
			sl = seen_find(&r->seen, frame, n, h);
			/* a new text: keep a copy, if there is room, to remember it by */
			if (!sl->len && (n > UINT32_MAX || r->seen.text.len + n > SEEN_MAX_TEXT ||
					 buf_append(&r->seen.text, frame, n) < 0))
				sl = NULL;
		}
		if (sl && sl->len) {
			r->ids[depth] = sl->id;
		} else {
			if (austin)     /* typed otherwise: not cached */
				austin_frame_parse(frame, n, &f);
			else            /* cuts frame up: the cache took a copy */
				frame_parse(frame, n, &f);
			ret = profile_frame_id(p, &f, &r->ids[depth]);
			if (ret < 0)
				return ret;
			if (sl) {
				*sl = (struct seen_slot) { h, r->seen.text.len - n, (uint32_t) n,
							   r->ids[depth] };
				r->seen.n++;
			}
		}
		frame = semi ? semi + 1 : NULL;
	}
	if (count == 0)
		return 0;
	values[0] = count;
	values[1] = count;
	ret = profile_add(p, 0, r->ids, depth, values);
	if (ret < 0)
		return ret;
	r->total += count;
	return 0;
}

int folded_read(FILE *in, struct profile *p, struct folded_read_error *ret_err)
{
	struct reader r = { .in = in };
	const char *reason = NULL;
	uint64_t lineno = 0, t0 = profile_total(p, 0), t1 = profile_total(p, 1);
	int ret;

	r.total = t0 > t1 ? t0 : t1;
	buf_init(&r.line);
	buf_init(&r.name);
	buf_init(&r.seen.text);
	r.chunk = malloc(CHUNK_SIZE);
	r.ids = malloc(64 * sizeof(*r.ids));
	r.cap_ids = 64;
	ret = r.chunk && r.ids ? 0 : -ENOMEM;
	while (ret >= 0) {
		lineno++;
		ret = reader_next(&r);
		if (ret <= 0)
			break;
		ret = line_add(&r, p, lineno, &reason);
	}
	if (ret == -E2BIG && !reason)
		reason = "line longer than 1 MiB";
	if (ret < 0 && !reason)
		lineno = 0;     /* not about one line: memory or a read error */
	if (ret_err)
		*ret_err = (struct folded_read_error) { ret < 0 ? lineno : 0, ret < 0 ? reason : NULL };
	buf_release(&r.line);
	buf_release(&r.name);
	buf_release(&r.seen.text);
	free(r.seen.slots);
	free(r.chunk);
	free(r.ids);
	return ret < 0 ? ret : 0;
}
