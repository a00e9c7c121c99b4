/* label: frame texts for people, module-relative paths (see label.h). */
#include <stdbool.h>
#include <string.h>

#include "base/buf.h"
#include "output/label.h"
#include "output/output.h"

/* The end of the last occurrence of needle in s (a pointer past it), or NULL. */
static const char *after_last(const char *s, const char *needle)
{
	const char *at = NULL, *p = s;
	size_t n = strlen(needle);

	while ((p = strstr(p, needle))) {
		at = p + n;
		p++;
	}
	return at;
}

/* Whether s starts with "pythonX[.Y][suffix]/" (digits, an optional dot and digits, up to two
 * ABI letters such as 't' or 'd'): its length up to and with the '/', else 0. */
static size_t python_dir(const char *s)
{
	size_t i = 6, letters = 0;

	if (strncmp(s, "python", 6) != 0 || s[i] < '0' || s[i] > '9')
		return 0;
	while (s[i] >= '0' && s[i] <= '9')
		i++;
	if (s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9')
		for (i++; s[i] >= '0' && s[i] <= '9'; i++)
			;
	while (s[i] >= 'a' && s[i] <= 'z' && letters++ < 2)
		i++;
	return s[i] == '/' ? i + 1 : 0;
}

size_t label_sys_path_len(const char *file)
{
	const char *at, *best, *lib = NULL;

	if (!file || file[0] != '/')
		return 0;
	at = after_last(file, "/site-packages/");
	best = after_last(file, "/dist-packages/");
	if (at && (!best || at > best))
		best = at;
	if (!best)
		best = after_last(file, "/lib-dynload/");
	/* the stdlib: the last "/lib/pythonX.Y/" (a stdlib inside another's tree is the inner one) */
	for (const char *p = file; !best && (p = strstr(p, "/lib")); p++) {
		const char *q = p + 4;
		size_t n;

		if (q[0] == '6' && q[1] == '4')
			q += 2;
		if (*q == '/' && (n = python_dir(q + 1)))
			lib = q + 1 + n;
	}
	if (!best)
		best = lib;
	/* an entry with nothing below it names no file */
	return best && *best ? (size_t) (best - file) : 0;
}

/* Whether file is a path that a captured walk cut ("/root/.pyenv/versions/3...." of a module
 * freed since its sample: pyframes/code.c): its directory is unknown. */
static bool label_path_cut(const char *file)
{
	size_t n = strlen(file);

	return n > 3 && strcmp(file + n - 3, "...") == 0;
}

void label_paths_add(struct label_paths *lp, const char *file)
{
	const char *slash;
	size_t n;

	if (!file || file[0] != '/' || label_sys_path_len(file) || label_path_cut(file))
		return;
	if (!lp->dir) {
		slash = strrchr(file, '/');
		lp->dir = file;
		lp->dir_len = (size_t) (slash - file) + 1;
		return;
	}
	/* the longest common prefix that ends at a '/' */
	for (n = 0; n < lp->dir_len && file[n] == lp->dir[n]; n++)
		;
	while (n > 0 && lp->dir[n - 1] != '/')
		n--;
	lp->dir_len = n;        /* at least 1: both start with '/' */
}

void label_paths_init(struct label_paths *lp, const struct profile *p)
{
	*lp = (struct label_paths) { 0 };
	for (uint32_t id = 0; id < profile_n_frames(p); id++) {
		const struct profile_frame *f = profile_frame(p, id);

		if (f->kind == FRAME_PYTHON)
			label_paths_add(lp, f->file);
	}
	if (lp->dir && lp->dir_len <= 1)
		*lp = (struct label_paths) { 0 };
}

const char *label_path(const struct label_paths *lp, const char *file)
{
	size_t n = label_sys_path_len(file);

	if (n)
		return file + n;
	/* a directory of "/" alone (label_paths_add() unfinished) is none */
	if (file && lp && lp->dir && lp->dir_len > 1 &&
	    strncmp(file, lp->dir, lp->dir_len) == 0 && file[lp->dir_len])
		return file + lp->dir_len;
	return file;
}

/* f as labels show it: file is f's file, or what replaces it. */
static int label_put(const struct profile_frame *f, const char *file, struct buf *out)
{
	struct profile_frame g = *f;
	size_t n;

	g.file = file;
	if (f->kind == FRAME_NATIVE && f->module && (n = strlen(f->module)) &&
	    strncmp(f->name, f->module, n) == 0 && strncmp(f->name + n, "+0x", 3) == 0)
		g.module = NULL;
	return folded_frame_text(&g, out);
}

int label_frame(const struct profile_frame *f, const struct label_paths *lp, struct buf *out)
{
	return label_put(f, f->kind == FRAME_PYTHON ? label_path(lp, f->file) : f->file, out);
}

int label_frame_full(const struct profile_frame *f, struct buf *out)
{
	return label_put(f, f->file, out);
}
