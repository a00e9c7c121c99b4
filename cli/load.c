/* load: a folded or pprof file into a profile, the format told by its first bytes (load.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "base/log.h"
#include "cli/load.h"
#include "output/output.h"

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

static struct profile *load_folded(FILE *in, const char *name)
{
	const char *event = "samples";
	struct profile *p = profile_new(&event, 1);
	struct folded_read_error err = { 0 };
	int r;

	if (!p) {
		log_error("out of memory reading '%s'", name);
		return NULL;
	}
	r = folded_read(in, p, &err);
	if (r == -EINVAL || r == -E2BIG || r == -EOVERFLOW)
		log_error("%s:%llu: %s; a folded line is 'frame;frame;...;leaf COUNT'", name,
			  (unsigned long long) err.line, err.reason ? err.reason : "malformed line");
	else if (r == -ENOMEM)
		log_error("out of memory reading '%s'", name);
	else if (r < 0)
		log_errno(r, "cannot read '%s'", name);
	if (r < 0) {
		profile_free(p);
		return NULL;
	}
	return p;
}

static struct profile *load_pprof(FILE *in, const char *name)
{
	struct pprof_read_error err = { NULL, 0 };
	struct profile *p = NULL;
	int r = pprof_read(in, &p, &err);

	if (r == -EINVAL && err.inflate_limit && err.inflate_limit < PPROF_READ_MAX_SIZE)
		log_error("%s: not a valid pprof profile: inflates past %zu MiB (ratio cap %d:1): "
			  "a gzip bomb?", name, err.inflate_limit >> 20, PPROF_READ_MAX_RATIO);
	else if (r == -EINVAL)
		log_error("%s: not a valid pprof profile: %s", name,
			  err.reason ? err.reason : "malformed");
	else if (r == -ENOMEM)
		log_error("out of memory reading '%s'", name);
	else if (r < 0)
		log_errno(r, "cannot read '%s'", name);
	return r < 0 ? NULL : p;
}

struct profile *load_profile(const char *path)
{
	static const cookie_io_functions_t io = { .read = peeked_read };
	bool is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? "<stdin>" : path;
	struct peeked pk = { .in = is_stdin ? stdin : fopen(path, "re") };
	struct profile *p = NULL;
	FILE *in;

	if (!pk.in) {
		log_errno(-errno, "cannot read '%s'", name);
		return NULL;
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
		log_errno(errno ? -errno : -EIO, "cannot read '%s'", name);
		if (!is_stdin)
			(void) fclose(pk.in);
		return NULL;
	}
	in = fopencookie(&pk, "r", io);
	if (!in) {
		log_error("out of memory reading '%s'", name);
	} else {
		p = pprof_sniff(pk.head, pk.len) ? load_pprof(in, name) : load_folded(in, name);
		(void) fclose(in);
	}
	if (!is_stdin)
		(void) fclose(pk.in);
	if (p && !profile_meta_const(p)->target && profile_set_target(p, path) < 0) {
		log_error("out of memory reading '%s'", name);
		profile_free(p);
		p = NULL;
	}
	return p;
}
