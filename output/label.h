/*
 * label: the text of a frame shown to people (a flame graph's box, diff's and top's tables),
 * as opposed to its folded text (folded_frame_text(), output.h), which is data other tools
 * read and keeps every full path.
 *
 * A Python file's module-relative path is its path below the sys.path entry it was imported
 * from. hwspy does not read the target's sys.path; the entry is told by its shape, and for
 * files under no such entry (the user's own scripts) by the other files of the same profile:
 *   1. below the last "/site-packages/" or "/dist-packages/"      numpy/core/numeric.py
 *   2. else below the last "/lib-dynload/"                         _json.cpython-311....so
 *   3. else below the last "/lib/pythonX[.Y][suffix]/" (lib64 too: the stdlib of pyenv, venv,
 *      conda, Debian, /usr/local)                                  threading.py, json/decoder.py
 *   4. else, for an absolute path, below the directory all such paths of the profile's Python
 *      frames share (label_paths_init(): /src/v1/ for /src/v1/app.py and /src/v1/pkg/m.py;
 *      the file's own directory when it is the only one); nothing when that is "/" alone. A
 *      path cut short ("/root/.pyenv/versions/3....", a module's code freed since its sample:
 *      named from the capture alone) has no say in that directory
 *   5. anything else (relative paths, "<frozen importlib._bootstrap>", "<string>") as it is.
 * So a profile of one script taken in /src/v1 and one taken in /src/v2, or in two virtualenvs,
 * name their files alike, and diff matches them (diff_opts.exact_paths off).
 *
 * A label is what folded_frame_text() writes, with two changes: a Python frame's file is its
 * module-relative path (label_frame(); label_frame_full() keeps the full path), and a native
 * frame whose name already starts with its module (`module+0xOFF`, hwspy's name for code
 * without a symbol) is not followed by ` [module]` again.
 *
 * struct label_paths is embedded and owns nothing: it points into the profile it was made
 * from, valid while that profile lives. Nothing here allocates but the buf appended to.
 */
#ifndef HWSPY_OUTPUT_LABEL_H
#define HWSPY_OUTPUT_LABEL_H

#include <stddef.h>

#include "output/profile.h"

struct buf;

struct label_paths {
	const char *dir;        /* rule 4's directory, with its final '/' (NULL: none) */
	size_t dir_len;
};

/* Rules 1-3 alone: how many leading bytes of file are its sys.path entry (0: none known). */
size_t label_sys_path_len(const char *file);
/* Rule 4's directory from p's Python frames. */
void label_paths_init(struct label_paths *lp, const struct profile *p);
/* ... or from Python files given one at a time (a zeroed lp first; file must outlive lp): for
 * frames that are in no profile (a dump's). */
void label_paths_add(struct label_paths *lp, const char *file);
/* The module-relative path of file: a pointer into file (rules 1-5; lp NULL: rules 1-3 only). */
const char *label_path(const struct label_paths *lp, const char *file);
/* Appends f's label to out, its path as label_path(lp, ...) gives it (lp NULL: rules 1-3).
 * 0 or -ENOMEM. */
int label_frame(const struct profile_frame *f, const struct label_paths *lp, struct buf *out);
/* The same with the full path (--full-paths). */
int label_frame_full(const struct profile_frame *f, struct buf *out);

#endif
