/*
 * load: a folded or pprof file into a profile, the format told by its first bytes (see
 * profile_load() in output.h). Each failure's one line goes into the caller's buffer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include <stdarg.h>

#include "output/output.h"

/* The reason of a failure: fmt into why (": strerror(-r)" after it where r is not 0). */
struct why {
	char *buf;
	size_t size;
	int r;                          /* the failure's -errno */
};

__attribute__((format(printf, 3, 4)))
static void say(struct why *w, int r, const char *fmt, ...)
{
	va_list ap;
	int n;

	w->r = r ? r : !strncmp(fmt, "out of memory", 13) ? -ENOMEM : -EINVAL;
	va_start(ap, fmt);
	n = vsnprintf(w->buf, w->size, fmt, ap);
	va_end(ap);
	if (n >= 0 && r && (size_t) n < w->size)
		snprintf(w->buf + n, w->size - (size_t) n, ": %s", strerror(-r));
}

#define PEEK_BYTES 64

/* A stream that gives the peeked bytes again, then the rest of the underlying one. */
struct peeked {
	FILE *in;
	unsigned char head[PEEK_BYTES];
	size_t len, pos;
};

static ssize_t peeked_read(void *cookie, char *buf, size_t size)
{
	struct peeked *pk = cookie;
	size_t n;

	if (pk->pos < pk->len) {
		n = pk->len - pk->pos < size ? pk->len - pk->pos : size;
		memcpy(buf, pk->head + pk->pos, n);
		pk->pos += n;
		return (ssize_t) n;
	}
	errno = 0;
	n = fread(buf, 1, size, pk->in);
	if (n == 0 && ferror(pk->in)) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return (ssize_t) n;
}

/* Whether the len bytes at h start with s, letter case aside. */
static bool starts_with(const unsigned char *h, size_t len, const char *s)
{
	return len >= strlen(s) && !strncasecmp((const char *) h, s, strlen(s));
}

/*
 * What a file whose first line is no folded line looks like, from its first bytes: a format
 * hwspy does not read ("speedscope JSON", "an SVG image" ...), or NULL when nothing is
 * recognised (a malformed folded file, then). *ret_line: the line where its content starts.
 */
static const char *other_format(const unsigned char *h, size_t len, uint64_t *ret_line)
{
	size_t i = len >= 3 && !memcmp(h, "\xef\xbb\xbf", 3) ? 3 : 0;         /* a UTF-8 BOM */
	size_t j;

	*ret_line = 1;
	if (starts_with(h, len, "\x7f" "ELF"))
		return "an ELF executable or library";
	if (starts_with(h, len, "PERFILE2"))
		return "a perf.data file ('perf script | stackcollapse-perf.pl' makes folded stacks "
		       "of it)";
	for (; i < len && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n'); i++)
		*ret_line += h[i] == '\n';
	for (j = i + 1; j < len && (h[j] == ' ' || h[j] == '\t' || h[j] == '\r' || h[j] == '\n'); j++)
		;
	/* '{' then a key or '}', '[' then a value: not a "[thread 1];main 5" folded line */
	if (i < len && ((h[i] == '{' && (j == len || h[j] == '"' || h[j] == '}')) ||
			(h[i] == '[' && (j == len || strchr("{[\"]0123456789-", h[j]))))) {
		if (memmem(h, len, "speedscope", 10))
			return "speedscope JSON";
		if (memmem(h, len, "traceEvents", 11) || memmem(h, len, "\"ph\"", 4))
			return "a Chrome trace (JSON)";
		return "JSON";
	}
	if (starts_with(h + i, len - i, "<svg") || (starts_with(h + i, len - i, "<?xml") &&
						    memmem(h, len, "<svg", 4)))
		return "an SVG image";
	if (starts_with(h + i, len - i, "<!doctype html") || starts_with(h + i, len - i, "<html"))
		return "HTML";
	if (starts_with(h + i, len - i, "<?xml"))
		return "XML";
	if (memchr(h, '\0', len))
		return "binary data";
	return NULL;
}

static struct profile *load_folded(FILE *in, const char *name, const struct peeked *pk,
				   struct why *w)
{
	const char *event = "samples";
	struct profile *p = profile_new(&event, 1);
	struct folded_read_error err = { 0 };
	const char *other = NULL;
	uint64_t first = 0;
	bool malformed;
	int r;

	if (!p) {
		say(w, 0, "out of memory reading '%s'", name);
		return NULL;
	}
	r = folded_read(in, p, &err);
	malformed = r == -EINVAL || r == -E2BIG || r == -EOVERFLOW;
	if (malformed)
		other = other_format(pk->head, pk->len, &first);
	if (other && err.line <= first)
		say(w, 0, "'%s' is not a folded file: it looks like %s; hwspy reads folded stacks "
			  "and pprof", name, other);
	else if (malformed)
		say(w, 0, "%s:%llu: %s; a folded line is 'frame;frame;...;leaf COUNT'", name,
			  (unsigned long long) err.line, err.reason ? err.reason : "malformed line");
	else if (r == -ENOMEM)
		say(w, 0, "out of memory reading '%s'", name);
	else if (r < 0)
		say(w, r, "cannot read '%s'", name);
	if (r < 0) {
		profile_free(p);
		return NULL;
	}
	return p;
}

static struct profile *load_pprof(FILE *in, const char *name, struct why *w)
{
	struct pprof_read_error err = { NULL, 0 };
	struct profile *p = NULL;
	int r = pprof_read(in, &p, &err);

	if (r == -EINVAL && err.inflate_limit && err.inflate_limit < PPROF_READ_MAX_SIZE)
		say(w, 0, "%s: not a valid pprof profile: inflates past %zu MiB (ratio cap %d:1): "
			  "a gzip bomb?", name, err.inflate_limit >> 20, PPROF_READ_MAX_RATIO);
	else if (r == -EINVAL)
		say(w, 0, "%s: not a valid pprof profile: %s", name,
			  err.reason ? err.reason : "malformed");
	else if (r == -ENOMEM)
		say(w, 0, "out of memory reading '%s'", name);
	else if (r < 0)
		say(w, r, "cannot read '%s'", name);
	return r < 0 ? NULL : p;
}

int profile_load(const char *path, struct profile **ret, char *why, size_t size)
{
	static const cookie_io_functions_t io = { .read = peeked_read };
	bool is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? "<stdin>" : path;
	struct peeked pk = { .in = is_stdin ? stdin : fopen(path, "re") };
	struct profile *p = NULL;
	struct why wb = { why, size, 0 }, *w = &wb;
	FILE *in;

	*ret = NULL;
	if (size)
		why[0] = '\0';

	if (!pk.in) {
		say(w, -errno, "cannot read '%s'", name);
		return w->r;
	}
	/* the first bytes (all of them unless the file is shorter), to tell the format */
	while (pk.len < PEEK_BYTES) {
		size_t n;

		errno = 0;
		n = fread(pk.head + pk.len, 1, PEEK_BYTES - pk.len, pk.in);
		pk.len += n;
		if (n == 0)
			break;
	}
	if (ferror(pk.in)) {
		say(w, errno ? -errno : -EIO, "cannot read '%s'", name);
		if (!is_stdin)
			(void) fclose(pk.in);
		return w->r;
	}
	in = fopencookie(&pk, "r", io);
	if (!in) {
		say(w, 0, "out of memory reading '%s'", name);
	} else {
		p = pprof_sniff(pk.head, pk.len) ? load_pprof(in, name, w) : load_folded(in, name, &pk, w);
		(void) fclose(in);
	}
	if (!is_stdin)
		(void) fclose(pk.in);
	if (p && !profile_meta_const(p)->target && profile_set_target(p, path) < 0) {
		say(w, 0, "out of memory reading '%s'", name);
		profile_free(p);
		p = NULL;
	}
	*ret = p;
	return p ? 0 : w->r ? w->r : -EINVAL;
}
