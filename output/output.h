/*
 * output: the writers and readers of profile files, and diff, over the model of
 * output/profile.h (which is all they know of hwspy).
 *
 *   writers  folded_write()      `frame;...;leaf COUNT` lines (FlameGraph, speedscope, ...)
 *            svg_write()         an interactive flame graph, plain or differential
 *            speedscope_write()  speedscope's JSON
 *            pprof_write()       gzip-compressed perftools.profiles.Profile (`go tool pprof`)
 *   readers  folded_read()       any collapser's folded text, added to a profile
 *            pprof_read()        a pprof protobuf, gzip-compressed or not, as a new profile
 *   choice   profile_write()     any of the writers, by format (format.c: its name, or the
 *                                output file's extension)
 *   loading  profile_load()      a file of any format hwspy reads (load.c: told by content)
 *   diff     diff_merge()        BEFORE and AFTER as one profile, which diff_functions(),
 *                                diff_common(), diff_folded_write(), diff_table_write() and
 *                                svg_write() (svg_opts.diff) read
 *
 * Writers take a const profile and change nothing in it; they write to out (opened, and
 * closed, by the caller), flush it and check it for errors before returning. On failure part
 * of the output may have been written: the caller discards it. Their option structs may be
 * NULL (every default). Readers either add to a profile the caller made (folded_read()) or
 * make one the caller frees (pprof_read(), diff_merge()). Nothing here prints or logs: each
 * function returns 0 (or a count, as it says) or a negative errno, and the readers say what
 * was wrong with their input in a static string (struct folded_read_error, struct
 * pprof_read_error) for the caller to report.
 *
 * The other headers of output/ (pprof_read.h, pprof_proto.h, ratios.h, utf8.h) are internal to
 * it.
 */
#ifndef HWSPY_OUTPUT_OUTPUT_H
#define HWSPY_OUTPUT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "output/profile.h"

/* ---- folded.c -------------------------------------------------------------------------------- */

/* The longest event name a folded header carries (a longer one is not written, nor read). */
#define FOLDED_EVENT_MAX 128

struct folded_opts {
	size_t column;          /* value column written as COUNT: 1 + event index (default 1) */
	bool header;            /* a first line `# hwspy event=NAME duration_ns=N`, where the
	                         * profile knows either: what hwspy's readers (convert, diff)
	                         * take the event and its unit from; other readers skip a '#' line */
};

/* The text of one frame as folded writes it: Python `name (file:line)`, native `name [module]`,
 * kernel `name_[k]`, others their name; no ';' or newline inside, never ending in " <digits>".
 * Appended to out (a struct buf from base/buf.h). */
struct buf;
int folded_frame_text(const struct profile_frame *f, struct buf *out);
/* Writes `frame;...;leaf COUNT` lines (after the header line, if asked), identical texts merged, stacks with COUNT 0 left out.
 * Returns 0, -EINVAL if column is past the last event, -ENOMEM, or -EIO (-errno where known)
 * when writing fails. */
int folded_write(const struct profile *p, const struct folded_opts *opts, FILE *out);

/* ---- svg.c ---------------------------------------------------------------------------------- */

/*
 * Writes one self-contained interactive SVG flame graph (no external resources), in the spirit
 * of Brendan Gregg's flamegraph.pl. The stacks are merged into a tree (root first, under a root
 * frame "all"; identical frame ids on the same path merge, threads only by their thread frames),
 * children ordered by frame text, so the layout does not depend on the order of the stacks.
 * Widths are proportional to the value column opts->column; y is the depth, root at the bottom
 * (flame) or at the top (icicle). A frame narrower than min_width_px is not drawn, nor anything
 * above it; their number is shown ("N frames narrower than X px not drawn"), and every drawn
 * frame's values stay exact (they include what was pruned). Frames whose column value is 0 are
 * not drawn; a profile whose column total is 0 gives a graph with no frames.
 *
 * Each drawn frame is a <g> holding a <title> (tooltip: the frame text as folded_frame_text()
 * writes it, Python frames with (file:line), cut at 4096 bytes with "..."; then one line
 * "EVENT: 1,234 (12.3%)" per event of the profile, the share being of that event's total, then
 * "samples: N" (left out when an event is named "samples", as a folded file's counts are), then
 * the derived ratios below), a <rect> filled by kind (Python green to
 * yellow, native orange to red, kernel blue, thread and special grey) in a shade stable by
 * frame name (hashed), and a <text> label cut to the width with "..", empty when under 3
 * characters fit. The label (output/label.h) names a Python file by its module-relative path
 * ("run (threading.py:1012)"; full_paths: its full path) and a native module once; where it
 * differs from the tooltip's first line the <text> holds it whole in data-label (for the
 * script to cut it again on a zoom).
 *
 * The drawn frame with the most self weight (its value less its drawn children's) is named in
 * the script by its rect's x and y attributes (HOT_X, HOT_Y, as ?x=..&y=.. name one): on load, when the URL names no zoom and that frame is outside the window, the
 * script scrolls the window to it (flame: with what is under it, down to the root, as far as
 * the window holds; icicle: with what is above it), so a graph whose tall, cold tower (imports
 * at startup) makes it taller than the window opens on its hot part, not on the tower.
 *
 * Derived ratios, from the frame's own (inclusive) values, each on a line of its own, in this
 * order, where the profile has the (hardware) events they need; a ratio whose denominator is
 * 0 for the frame is left out. Event names match with ":modifiers" ignored, and labels are
 * written without them.
 *   "IPC: 1.23"                         instructions / cycles (or cpu-cycles)
 *   then for each event whose name ends in "-misses" (in event order, once per name):
 *   "NAME per 1k instructions: 4.56"    1000 x NAME / instructions ("cache-misses per 1k
 *                                       instructions": misses per kilo-instruction, MPKI)
 *   "BASE miss rate: 12.3%"             NAME / its reference event, BASE being NAME without
 *                                       "-misses": cache-misses / cache-references,
 *                                       branch-misses / branches (else branch-instructions),
 *                                       X-load-misses / X-loads, X-store-misses / X-stores,
 *                                       X-prefetch-misses / X-prefetches ("L1-dcache-load miss
 *                                       rate", "LLC-load", "dTLB-load"); none without one
 * Ratios are written with 2 decimals, rates with 1.
 *
 * The embedded script: click a frame to zoom (it fills the width, its ancestors full width and
 * dimmed, other frames hidden), "Reset Zoom", "Search" (a prompt for a JavaScript regular
 * expression matched against frame texts; matching frames drawn in one colour, "Matched: x.x%"
 * the share of the drawn width covered, nested matches counted once), Ctrl-F / F3 to search,
 * Escape to reset both. The view is kept in the URL query: ?s=REGEX (search) and ?x=..&y=..
 * (the zoomed frame's rect x and y attributes), applied on load.
 *
 * Text is valid XML 1.0 whatever the names hold: & < > " ' escaped, characters XML forbids
 * (controls but tab, newline and CR; U+FFFE and U+FFFF) and each invalid UTF-8 sequence written
 * as one U+FFFD. opts may be NULL.
 *
 * Colour by a metric (color_by, not with diff): the widths stay those of column, and each
 * frame's fill shows a ratio of two events of the profile computed from the frame's own
 * (inclusive) values, so that one sees where IPC is low or misses per instruction are high.
 * The metric (svg_color_check() below): "ipc" (IPC as above), "mpki" (1000 x MISSES /
 * instructions, when p has exactly one "*-misses" event name: with two, which one would be
 * a guess) or "A/B", any two events of p (":modifiers" ignored), e.g. "page-faults/cpu-clock".
 *   Grey (rgb(180,180,180)): frames with fewer than SVG_COLOR_MIN_SAMPLES samples (column 0,
 *   inclusive), or whose denominator is 0. 10 because a count ratio over n samples is off by
 *   about 1/sqrt(n) of itself (Poisson): +-30% at 10, enough to tell apart the 2x differences
 *   a colour shows, while at 3 samples (+-60%) the colour would mostly show noise.
 *   Scale: ColorBrewer's YlOrRd from its 3rd class to its 7th, yellow (254,217,118) low to red
 *   (227,26,28) high, 5 stops interpolated in sRGB (as the legend's gradient is). Sequential:
 *   its lightness falls steadily (OKLab L 0.90 to 0.58), so the order reads in grey and to
 *   every kind of colour blindness (ColorBrewer marks it safe). A blue-to-red (or blue-to-
 *   yellow) ramp passes through a neutral for deuteranopes, where it meets the grey of "no
 *   value"; this one keeps its chroma (simulated deuteranopia, protanopia, tritanopia: OKLab
 *   distance >= 0.11 from the grey), stays away from the search fill (magenta), and its
 *   labels (black, white at the red end: see Labels below) keep 4.58:1 or more on it.
 *   Range: linear between the 2nd and the 98th percentile of the coloured frames' values, each
 *   frame weighted by its width (what is seen is area), frames past an end take that end's
 *   colour. A narrow frame with an extreme value (a few dozen samples of a tight loop) would
 *   otherwise take the whole scale for itself and leave every wide frame one colour; the order
 *   of values is kept all the same (a clipped frame is at least as red as any below it).
 *   When the two ends meet, a frame at them is drawn mid-scale.
 *   Legend (<g id="legend">, a row under the subtitle): "colour: LABEL", the low end's value
 *   (id legend-low, with "≤ " when a frame was clipped there), the gradient, the high end's
 *   (legend-high, "≥ " likewise), a grey swatch and what grey means; its <title> says how the
 *   ends were chosen. LABEL: "IPC", "NAME per 1k instructions" (mpki), or the metric as given.
 *   Tooltips: the metric's line comes first among the ratios, "LABEL: VALUE" (A/B with 4
 *   significant digits), for a grey frame "LABEL: VALUE, too few samples to colour (N, under
 *   10)" or "LABEL: none (B is 0)"; the other ratios follow as above, the metric not repeated.
 *   Search and zoom work as above; resetting a search restores the metric's fills.
 *
 * Differential (diff): widths from the AFTER column (BEFORE with negate), so frames with no
 * weight on that side are not drawn; each frame is filled by the change of its inclusive share,
 * delta = after% - before% as diff_opts defines them: red grew, blue shrank, white unchanged,
 * the intensity |delta| / the largest |delta| of a drawn frame. The tooltip holds the frame
 * text, then "before: 1,234 (12.34%)", "after: 2,345 (23.45%)" and "delta: +1,111 (+11.11 pts)"
 * (the delta in counts: BEFORE scaled to AFTER's total unless diff_raw). The subtitle is the
 * event's headline (diff_headline(): the total change, in its unit), then what is compared.
 * Zoom, search and the URL work as above.
 *
 * Labels: black, or white on a fill too dark for black (WCAG 2 relative luminance under
 * 0.179, where white contrasts more), with every kind of fill: each label keeps a contrast of
 * 4.58:1 or more on its frame (a search's magenta fill takes black labels).
 *
 * Returns 0, -EINVAL if column (with diff, column + 1) is past the last event or width_px is
 * 20 or less, or color_by is set with diff or is malformed, -ENOENT if color_by needs an event
 * p lacks, -ENOMEM, or
 * -EIO (-errno where known) when writing fails (part of the file may have been written then).
 */
struct svg_opts {
	size_t column;          /* value column: 1 + event index; 0 = 1 */
	const char *title;      /* NULL: "Flame Graph" */
	const char *subtitle;   /* NULL: the column's event, rate, duration, target, Python version */
	bool icicle;            /* root at the top */
	double min_width_px;    /* frames narrower are pruned; 0 = 0.1 */
	unsigned width_px;      /* 0 = 1200 */
	/* A differential flame graph of a diff_merge() profile: column is the BEFORE column of
	 * the event shown, column + 1 its AFTER column. */
	bool diff;
	bool diff_raw;          /* shares as diff_opts.raw defines them */
	bool negate;            /* widths from BEFORE, not AFTER */
	const struct diff_side *diff_sides;     /* diff: BEFORE's and AFTER's, for the subtitle's
	                                         * headline (diff_headline()); NULL: unknown */
	const char *color_by;   /* NULL: fills by kind; else "ipc", "mpki" or "A/B" (not with diff) */
	bool full_paths;        /* labels with full paths (label_frame_full()), not module-relative */
};

int svg_write(const struct profile *p, const struct svg_opts *opts, FILE *out);

#define SVG_COLOR_MIN_SAMPLES 10        /* fewer (inclusive) samples: a grey frame */

/* What is wrong with a color_by metric: why, a phrase to follow the metric ("has no event after
 * '/'", "needs the events 'instructions' and 'cycles' (or 'cpu-cycles')"); at and len: the
 * event name in the metric the profile lacks (len 0: none in particular). Static strings. */
struct svg_metric_error {
	const char *why;
	size_t at, len;
};
/* Checks a color_by metric against p's events, or its form alone when p is NULL (then a metric
 * with several '/' passes: a PMU event's name holds two). 0; -EINVAL when it is malformed
 * (empty, a side of '/' empty, not ipc, mpki or A/B; several '/' and no split at one of them
 * into two events of p, or more than one); -ENOENT when p lacks an event it needs (A or B;
 * instructions and cycles for ipc; instructions and exactly one "*-misses" event for mpki).
 * *err (err may be NULL) says what. */
int svg_color_check(const struct profile *p, const char *metric, struct svg_metric_error *err);

/* ---- speedscope.c ---------------------------------------------------------------------------- */

/*
 * Writes speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json):
 * shared.frames holds every frame of p, index = frame id: Python frames with name, file and line
 * (line left out when 0), native frames with their module as "file" (no line), kernel frames with
 * "file" "[kernel.kallsyms]" as perf names the kernel, thread and special frames a name only.
 * Then one "sampled" profile per event x thread, event-major, threads by ascending tid (tid 0:
 * "all threads"): name "EVENT, thread TID NAME" (NAME: profile_thread_name(), left out when
 * none), unit "nanoseconds" for cpu-clock and task-clock (modifiers ignored) else "none",
 * startValue 0, endValue the total weight, samples (frame ids, root first) and integer weights
 * (the event's column): where the profile holds a complete time-ordered log
 * (profile_log_start), one per logged sample of that thread, by time (ties in the order
 * logged), so speedscope's time-ordered views show the run as it went; else one per stack of
 * that thread. Samples of weight 0 are left out, and a profile whose weight is 0, so
 * "profiles" may be empty.
 * activeProfileIndex is 0, exporter "hwspy VERSION", name opts->name, else the target, else
 * left out. Strings are escaped (control characters as \u00XX) and each invalid UTF-8 sequence
 * becomes one U+FFFD (as Python and browsers decode), so the file is valid JSON and UTF-8
 * whatever the names hold. Weights over 2^53 lose precision in JavaScript readers.
 *
 * Returns 0, -EOVERFLOW if a profile's total weight does not fit in 64 bits, -ENOMEM, or -EIO
 * (-errno where known) when writing fails. opts may be NULL.
 */
struct speedscope_opts {
	const char *name;       /* the file's name shown by speedscope; NULL: the target */
};

int speedscope_write(const struct profile *p, const struct speedscope_opts *opts, FILE *out);

/* ---- pprof.c --------------------------------------------------------------------------------- */

/*
 * Writes a gzip-compressed perftools.profiles.Profile protobuf, the file `go tool pprof` reads
 * (github.com/google/pprof/proto/profile.proto):
 *   sample_type          ["samples", "count"], then per event [name, "nanoseconds" for cpu-clock
 *                        and task-clock (modifiers ignored), else "events"]; default_sample_type
 *                        is event 0's name
 *   sample               one per stack with a non-zero value: location ids leaf first, values =
 *                        the stack's value vector, a numeric label "thread_id" when tid != 0,
 *                        then opts->labels' string labels, in their order (the same on every
 *                        sample: `go tool pprof -tags` lists them, -tagfocus picks by them)
 *   location             one per frame, id = frame id + 1, one line {function, line (Python
 *                        and native frames; 0 otherwise)}, mapping_id = its module's mapping
 *                        (native frames with a module)
 *   function             one per distinct (name, file): file = the frame's source file for
 *                        Python and native frames that have one, else the native module,
 *                        "[kernel.kallsyms]" for kernel frames, "" otherwise; start_line 0
 *                        (unknown); system_name is left empty, so that pprof takes name as
 *                        demangled already (it would cut "<module>" to "")
 *   mapping              one per native module: filename = the module, build_id = its
 *                        profile_build_id() (left out when none), has_functions; no addresses
 *   period_type, period  event 0 and its unit; its fixed period, else 1e9 / freq for clock
 *                        events in frequency mode, else 0 (unknown)
 *   time_nanos, duration_nanos   meta start_time_ns and duration_ns (left out when 0)
 *   comment              "hwspy VERSION", then opts->command_line if not NULL, then what pprof
 *                        has no field for, one "key: value" each (left out when unset or 0):
 *                        "target: TEXT", "python: VERSION", "lost: N", "dropped: N",
 *                        "threads: N", "threads not profiled: N", "threads not profiled,
 *                        why: TEXT", and for each event whose rate or sampling flag is not
 *                        profile_new()'s default (event 0 samples, the others are counted, no
 *                        rate): "event INDEX: sampling|counted[, frequency N Hz][, period N]";
 *                        then opts->comments, one each (pprof_read() takes one of them in the
 *                        "key: value" form above for what it says: use other keys)
 * string_table[0] is ""; strings are the profile's bytes, each invalid UTF-8 sequence replaced
 * by one U+FFFD (as speedscope_write does), each string stored once.
 *
 * Returns 0, -EOVERFLOW if a value or a column's total does not fit in int64 (nothing written
 * then), -EINVAL if labels holds a key without a value, an empty key or the key "thread_id"
 * (nothing written then), -ENOMEM, or -EIO (-errno where known) when writing fails. opts may
 * be NULL; with labels and comments NULL the file is what it was before either existed.
 */
struct pprof_opts {
	const char *command_line;       /* written as a comment; NULL: none */
	const char *const *labels;      /* NULL-terminated key, value pairs ({"service", "api",
	                                 * "pid", "123", NULL}): string labels on every sample;
	                                 * NULL: none */
	const char *const *comments;    /* NULL-terminated extra comment lines; NULL: none */
};

int pprof_write(const struct profile *p, const struct pprof_opts *opts, FILE *out);
/* pprof_write()'s -EOVERFLOW: the first value of column col (0: samples, 1 + e: event e) that
 * does not fit in int64 (*ret_sum false) or takes the column's total past INT64_MAX (true); 0
 * when every one fits. */
int pprof_over_limit(const struct profile *p, size_t *ret_col, uint64_t *ret_value,
		     bool *ret_sum);

/* ---- folded_read.c --------------------------------------------------------------------------- */

/*
 * Reads `frame;frame;...;leaf COUNT` lines (root first) as written by folded_write(), by perf
 * script | stackcollapse-perf.pl and FlameGraph's other collapsers, or by py-spy --format raw,
 * and adds them to p (created by the caller; any number of events) as stacks of thread 0.
 *
 * Values: COUNT goes to column 1 (event 0) and to column 0 (samples) as well: for every other
 * tool COUNT is a number of samples; for hwspy's own files it is the event's weight, the best
 * there is. Other columns get 0. Identical stacks add up; lines with COUNT 0 are checked but add
 * nothing.
 *
 * Lines: COUNT is the text after the last space, decimal digits only (no sign, no fraction),
 * at most UINT64_MAX, and the sum of all counts must fit in 64 bits too. Empty and blank lines
 * and lines starting with '#' are skipped; "\r\n" ends a line like "\n"; a UTF-8 byte-order mark
 * before line 1 is skipped; the last line needs no newline. Frames are split at ';' and must not
 * be empty. Bytes are kept as they are (invalid UTF-8 included); a NUL byte is an error.
 *
 * Frame texts are typed the way folded_frame_text() writes them, tried in this order:
 *   `[thread ...]`                  FRAME_THREAD, the whole text as name
 *   `[word]` (no space or bracket)  FRAME_SPECIAL, the whole text: [native], [unknown], and
 *                                   stackcollapse-perf's [libc.so.6] for unsymbolized code
 *   `name_[k]`                      FRAME_KERNEL, name without the suffix
 *   `name [module]`                 FRAME_NATIVE with module
 *   `name (file:LINE)`, `name (file)` FRAME_PYTHON with file and LINE (1..INT_MAX, no leading
 *                                   zero: otherwise ":..." is part of the file name, line 0)
 *   anything else                   FRAME_NATIVE, no module (perf's plain symbols, C++ names)
 * Lines in austin's form, `P<pid>;T<thread>;file:function:line;... COUNT` (a line starting with
 * P, digits, ";T"), are read so: the process is left out, the thread becomes the thread frame
 * `[thread <thread>]`, and each `file:function:line` a Python frame (the last two colons split
 * it; line 0 means unknown); a frame not of that form is typed as above.
 * The bracket or parenthesis that opens the module or file is the one matching the final ']'
 * or ')', preceded by a space, so names and paths with balanced brackets read back whole; other
 * texts may be typed otherwise but are written back the same, so folded_write(folded_read(text))
 * gives back every line of a folded_write() output (except a line whose root frame starts
 * with '#', which is read as a comment).
 *
 * Returns 0, or on failure (p then holds the lines before the failing one: discard it):
 *   -EINVAL     a malformed line          -E2BIG  a line over FOLDED_READ_MAX_LINE bytes or
 *   -EOVERFLOW  a count or the total          FOLDED_READ_MAX_FRAMES frames
 *               does not fit in 64 bits    -ENOMEM, or -errno of a read error (-EIO if unset)
 * and when ret_err is not NULL, fills it: the line number (1-based; 0 when the error is not
 * about one line) and a short static reason ("empty frame").
 */
#define FOLDED_READ_MAX_LINE    (1u << 20)
#define FOLDED_READ_MAX_FRAMES  65536

struct folded_read_error {
	uint64_t line;
	const char *reason;     /* static; NULL when nothing failed */
};

int folded_read(FILE *in, struct profile *p, struct folded_read_error *ret_err);

/* ---- pprof_read.c ---------------------------------------------------------------------------- */

/*
 * Reads a perftools.profiles.Profile protobuf, gzip-compressed (it starts with 1f 8b) or not,
 * as pprof_write() writes it and, as far as the model holds it, as other producers do (Go's
 * runtime/pprof, pprof itself, Pyroscope, Parca), into a new profile: *ret, which the caller
 * frees with profile_free(). The fields may come in any order.
 *
 * Values: the sample type named "samples" is column 0; the other types are the events, the
 * default_sample_type first (else, as profile.proto says, the last type), then the others in
 * file order; types past PROFILE_MAX_EVENTS events are left out. Without a "samples" type the
 * first type's values are column 0 as well (and still an event); a profile with the single
 * type "samples" has that one event. Units are not kept (pprof_write() derives them from the
 * names again). Values are int64 in pprof: a negative one is an error.
 *
 * Stacks: location ids leaf first become frames root first; a location's lines are its inlined
 * frames, innermost first, so each becomes a frame of its own. A numeric label "thread_id"
 * (1..UINT32_MAX) is the stack's tid, else 0; other labels are not kept. Identical stacks add up.
 * A sample without locations is the stack "[unknown]" (FRAME_SPECIAL).
 *
 * Frames, typed the way pprof_write() writes them, from each line's function (name, filename
 * F), its line L and its location's mapping M:
 *   M set                          FRAME_NATIVE, module = M's filename (NULL if ""), file = F
 *                                  unless "" or equal to the module, line L
 *   F "[kernel.kallsyms]"          FRAME_KERNEL
 *   F not "" or L not 0            FRAME_PYTHON with file F (NULL if "") and line L
 *   name `[thread ...]`            FRAME_THREAD
 *   name `[word]` (no space or bracket inside)   FRAME_SPECIAL
 *   otherwise                      FRAME_NATIVE without module
 * Lines outside 1..INT_MAX read as 0. A location without lines (not symbolized) is the native
 * frame "MODULE+0xOFFSET" of its mapping (OFFSET = address - start + file offset), else
 * "0xADDRESS", else "[unknown]". So pprof_write() then pprof_read() gives back every frame,
 * except a Python frame with neither file nor line, which reads back as a native frame without
 * module (its folded text is the same), and a native frame with a source file but no module,
 * which reads back as a Python frame; strings come back with pprof_write()'s U+FFFD repairs.
 * Mappings with a filename and a build_id that is hex text give profile_set_build_id().
 *
 * Metadata: the event that period_type names samples, with period as its fixed period (when
 * 0 < period <= INT64_MAX); time_nanos and duration_nanos (when not negative). In a file whose
 * first comment starts with "hwspy " the comments that pprof_write() adds are read back too
 * (target, python, lost, dropped, threads, threads not profiled and why, and each event's
 * rate, which then replaces what period_type said); others' comments and the command line are not kept.
 *
 * Everything in the file is checked before use: varints, lengths against what is left of
 * their message, string indexes against the string table (whose entry 0 must be ""), ids
 * (non-zero, unique, and every one referred to exists), value counts, the uncompressed size
 * (PPROF_READ_MAX_SIZE; and a gzip stream inflates to at most PPROF_READ_MAX_RATIO times its
 * compressed size, or PPROF_READ_MIN_INFLATE bytes when that is more: a gzip bomb costs memory
 * in proportion to the file, not 1 GiB; ret_err->inflate_limit then says the bound), the
 * number of items of each kind (PPROF_READ_MAX_ITEMS, sample types PPROF_READ_MAX_TYPES) and the depth of a stack after inlined frames are expanded
 * (PPROF_READ_MAX_FRAMES).
 *
 * Returns 0, or on failure (*ret is then NULL):
 *   -EINVAL     malformed or over a limit; ret_err->reason (when ret_err is not NULL) says
 *               what in a few static words: "truncated gzip stream", "truncated varint",
 *               "length past the end of the message", "string index out of range",
 *               "sample refers to a missing location", "no sample types" ...
 *   -ENOMEM, or -errno of a read error (-EIO if unset).
 */
#define PPROF_READ_MAX_SIZE     (1u << 30)      /* bytes, compressed or not */
#define PPROF_READ_MAX_ITEMS    (1u << 24)      /* samples, locations, strings ... each */
#define PPROF_READ_MAX_TYPES    1024            /* sample types */
#define PPROF_READ_MAX_FRAMES   65536           /* frames of one stack */
/* inflated size <= max(MIN_INFLATE, MAX_RATIO x compressed): hwspy's own profiles inflate 1.2x
 * (10^5 varied stacks) to 22x (10^5 samples of one 200-frame stack) */
#define PPROF_READ_MAX_RATIO    64
#define PPROF_READ_MIN_INFLATE  (64u << 20)

struct pprof_read_error {
	const char *reason;     /* static; NULL when nothing failed or not about the file */
	size_t inflate_limit;   /* bytes, when the failure was inflating past it; else 0 */
};

int pprof_read(FILE *in, struct profile **ret, struct pprof_read_error *ret_err);
/* The same from memory: data[0..len), compressed or not. */
int pprof_read_mem(const void *data, size_t len, struct profile **ret,
		   struct pprof_read_error *ret_err);
/* Whether a file that starts with head[0..len) (its first bytes, up to 64 looked at) is pprof
 * rather than text: the gzip magic, or a protobuf that starts with a length-delimited Profile
 * field and holds a control character (not tab, newline or CR) that text never has. Folded
 * files and empty files are not pprof. */
bool pprof_sniff(const void *head, size_t len);

/* ---- diff.c --------------------------------------------------------------------------------- */

/*
 * Differential profiles: what changed between BEFORE and AFTER.
 *
 * diff_merge() builds one profile from the two, the input of every differential output:
 *   frames   every frame of both, matched by what folded_frame_text() shows of them: kind and
 *            name, a Python frame's file and line, a native frame's module (a native frame's
 *            source file and line, which pprof files carry, are dropped); with ignore_lines a
 *            Python frame's line is dropped too, so that an edit that shifts lines still
 *            matches. A Python frame's file is its module-relative path (output/label.h, each
 *            side's own scripts' directory found in that side), so that profiles taken in two
 *            checkouts (/src/v1/app.py, /src/v2/app.py) or two virtualenvs match, and the
 *            merged profile holds those paths; with exact_paths the full paths, as they are. Thread frames are dropped and every stack is put on thread 0 (thread ids
 *            differ from run to run); a stack left without frames becomes "[no frames]". A
 *            stack of one side with no weight in any shared event adds nothing.
 *   events   the events of AFTER that BEFORE has too (profile_find_event() on BEFORE's names),
 *            in AFTER's order, at most PROFILE_MAX_EVENTS / 2 of them: shared event i has its
 *            BEFORE values in column 1 + 2i and its AFTER values in column 2 + 2i, both named
 *            as in AFTER. When no name is shared and one side has the single event "samples"
 *            (a folded file read by hwspy convert or diff: its counts have no event name), its
 *            column pairs with the other's event 0, named as on that other side.
 *   samples  column 0 holds AFTER's sample counts.
 *   meta     target "BEFORE -> AFTER" (the targets, when both are set), the rest left empty.
 * Returns 0, -ENOENT when no event is shared, -ENOMEM.
 *
 * Shares. By default each side is normalised to its own total: before% = b / Tb and
 * after% = a / Ta (Tb, Ta: the event's totals), delta = after% - before% in percentage points,
 * and the delta in counts is a - b * Ta / Tb (BEFORE scaled to AFTER's total). With raw (equal
 * work, --no-normalize) both are shares of BEFORE's total: before% = b / Tb, after% = a / Tb,
 * and the delta in counts is a - b.
 */
struct diff_opts {
	bool ignore_lines;      /* match Python frames by function and file only */
	bool raw;               /* counts as they are, shares of BEFORE's total */
	bool native_offsets;    /* diff_functions(): native code without a symbol as it is named
	                         * ("mod.so+0x1a2b"), not one function per module */
	bool exact_paths;       /* match Python files by their full paths */
};

int diff_merge(const struct profile *before, const struct profile *after,
	       const struct diff_opts *opts, struct profile **ret);
/* Shared events in a merged profile, and event i's columns. */
size_t diff_n_events(const struct profile *merged);
static inline size_t diff_before_col(size_t event) { return 1 + 2 * event; }
static inline size_t diff_after_col(size_t event) { return 2 + 2 * event; }

/* One function (Python frames without their line, so all the lines of a function count as one)
 * and its weight in BEFORE and AFTER: self (it is the leaf) and total (it is on the stack,
 * counted once per stack however often it recurses). Native code without a symbol, which
 * hwspy names "MODULE+0xOFFSET" (with " [MODULE]" after it or not), is one function per
 * module, "[MODULE]", unless native_offsets: its offsets are addresses, not functions, and
 * they move with every build of the module. */
struct diff_func {
	const char *name;       /* its label (label_frame_full(): the paths diff_merge() kept) without
	                         * the line: "load (data.py)", "memcpy [libc.so.6]",
	                         * "[_multiarray_umath.cpython-311-x86_64-linux-gnu.so]" */
	uint64_t self_before, self_after, total_before, total_after;
	double self_delta, total_delta;         /* in percentage points, as above */
	bool native_module;     /* a module's code without symbols, all its offsets */
};

/* The functions of a merged profile for shared event `event`, those that changed most first:
 * ranked by |self_delta| (where the change is: its callers' totals change as much), then by
 * |total_delta|, then by name; functions with no weight on either side left out.
 * *ret holds *ret_n rows and, in the same block, their names: one free(*ret) frees both.
 * Returns 0, -EINVAL (no such event), -ENOMEM. */
int diff_functions(const struct profile *merged, size_t event, const struct diff_opts *opts,
		   struct diff_func **ret, size_t *ret_n);

/* How much the two sides share: the fraction (0..1) of BEFORE's and of AFTER's weight for shared
 * event `event` in stacks with at least one function (not a special frame) that has weight on
 * both sides. Near 0 for profiles of unrelated programs. Returns 0, -EINVAL, -ENOMEM. */
int diff_common(const struct profile *merged, size_t event, double *ret_before,
		double *ret_after);

/* `stack BEFORE AFTER` lines for shared event `event`, as FlameGraph's difffolded.pl writes them
 * and flamegraph.pl reads them: stacks in byte order, BEFORE scaled to AFTER's total (rounded)
 * unless opts->raw. Returns 0, -EINVAL (no such event), -ENOMEM, or -EIO (-errno where
 * known) when writing fails. */
int diff_folded_write(const struct profile *merged, size_t event, const struct diff_opts *opts,
		      FILE *out);

/* What each side is: its name (file), duration (0: unknown), and whether its weights are a
 * folded file's counts, of no known unit (its one event "samples", paired with the other's). */
struct diff_side {
	const char *name;
	uint64_t duration_ns;
	bool plain;
};

/*
 * The headline of shared event `event`, appended to out, in the event's unit
 * (profile_event_unit()):
 *   time   "cpu-clock: 3.14 s -> 1.18 s of CPU, -62.4% (1.57 CPUs -> 0.59 CPUs, -62.4%)":
 *          seconds (ms, µs, ns under 1 s, 1 ms, 1 µs), "off the CPU" / "of wall time" for off-cpu and wall, whose
 *          rates are "threads waiting" / "threads";
 *   count  "cache-misses: 1.20 G -> 0.80 G, -33.3% (120 M/s -> 80 M/s, -33.3%)": exact under
 *          100,000 ("1,234"), else k, M, G ...; a folded file's "samples" are counts.
 * Both numbers of a pair in one unit, 3 significant digits on the larger. The rates (in
 * parentheses) when both sides' durations are known (before and after may be NULL). One
 * side plain and the other not: the totals as counts and "(BEFORE is a folded file's counts,
 * of no known unit: compare the shares)", no change. 0, -EINVAL (no such event), -ENOMEM.
 */
struct buf;
int diff_headline(const struct profile *merged, size_t event, const struct diff_side *before,
		  const struct diff_side *after, struct buf *out);

/*
 * The text report: per shared event its headline (diff_headline()), then the top functions of
 * diff_functions() as a table: self before %, after %, delta (points, and seconds for a time
 * event, counts for the others), total the same, and the function; functions whose shares did
 * not change (at 0.01 points) are left out; a line under the rows says what a module's row
 * ("[MODULE]", diff_func) holds when one is shown. top: rows per event (0 = 20). Returns 0,
 * -ENOMEM, or -EIO (-errno where known) when writing fails.
 */
int diff_table_write(const struct profile *merged, const struct diff_side *before,
		     const struct diff_side *after, const struct diff_opts *opts, size_t top,
		     FILE *out);

/* speedscope.c: s as a JSON string, quoted and escaped (controls as \u00XX, each invalid UTF-8
 * sequence as one U+FFFD), for the other JSON writers (hwspy stat --json). Errors show in
 * ferror(out). */
void json_write_string(FILE *out, const char *s);

/* ---- format.c: the writer chosen ----------------------------------------------------------- */

enum profile_format {
	PROFILE_FOLDED,                 /* .folded, .txt, and any other name */
	PROFILE_SPEEDSCOPE,             /* .speedscope.json */
	PROFILE_SVG,                    /* .svg: an interactive flame graph */
	PROFILE_PPROF,                  /* .pb.gz, .pprof */
};
/* "folded", "speedscope", "svg", "pprof": 0, or -EINVAL. */
int profile_format_parse(const char *name, enum profile_format *ret);
/* The format a file name asks for by its extension (folded when none says otherwise). */
enum profile_format profile_format_of_path(const char *path);
const char *profile_format_name(enum profile_format f);
struct profile_write_opts {
	const char *weight;             /* the event folded and SVG weigh by (NULL: the first);
	                                 * the other formats keep every event */
	const char *title;              /* SVG */
	bool icicle;                    /* SVG: root at the top */
	double min_width;               /* SVG: px (0: the default) */
	const char *color_by;           /* SVG: svg_opts.color_by */
	const char *command_line;       /* pprof's comments */
	bool full_paths;                /* SVG: svg_opts.full_paths */
	const char *const *labels;      /* pprof: pprof_opts.labels */
	const char *const *comments;    /* pprof: pprof_opts.comments */
};
/* Writes p as f (o NULL: the defaults). 0, -ENOENT (o->weight names no event of p), or the
 * writer's -errno. */
int profile_write(enum profile_format f, const struct profile *p,
		  const struct profile_write_opts *o, FILE *out);

/* ---- load.c: a profile file of any format ---------------------------------------------------
 *
 * The format is told by the content, never by the name: a file that starts like pprof
 * (pprof_sniff(): the gzip magic 1f 8b, or an uncompressed perftools.profiles.Profile
 * protobuf) is read by pprof_read(), anything else as folded text by folded_read(). path "-"
 * is standard input: its first bytes are peeked and then read again through the same stream,
 * so a pipe works too (nothing is rewound).
 *
 * What comes back:
 *   folded  one event named "samples", each line's COUNT in column 0 and in event 0 (see
 *           folded_read()), all stacks on thread 0; target = the path.
 *   pprof   what pprof_read() gives: the file's events, threads, build-ids and, for hwspy's
 *           own files, its metadata; target = the path when the file names none.
 * An empty profile (no stacks, or only zero counts; an empty file reads as an empty folded
 * file) is NOT an error here: each caller decides what it means.
 *
 * On failure, -errno and ONE line in why (NAME: the path or "<stdin>"):
 *   cannot read 'NAME': REASON (strerror)                     cannot open or read the file
 *   NAME:LINE: REASON; a folded line is 'frame;...;leaf COUNT'  malformed folded line
 *   'NAME' is not a folded file: it looks like WHAT; ...      another format
 *   NAME: not a valid pprof profile: REASON                   malformed pprof
 *   out of memory reading 'NAME'
 */
int profile_load(const char *path, struct profile **ret, char *why, size_t size);

#endif
