/*
 * top_view: what `hwspy top` shows (top.h): the header (target, Python, mode, events, the
 * window, sampling rates, the target's CPU and context switches), the table (hwspy.h live table),
 * the keys and their help, and the same as plain text (--once, and the last table at exit).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/text.h"
#include "cli/top.h"

#define HEADER_LINES 5          /* four lines of header, then the column bar (line 4) */

static const char *const help_lines[] = {
	"hwspy top: keys",
	"",
	"q, Ctrl-C  quit",
	"s          sort by self share",
	"t          sort by total share",
	"< >        sort by the column left / right",
	"T          next thread (all, then each by tid, then all)",
	"z          zero the counts: a new window from now",
	"n          hide / show native frames' rows (--native)",
	"h, ?       this help (any key closes it)",
};

static const char *mode_text(struct top *t)
{
	hwspy_recorder_stats(t->rec, &t->st);
	switch (hwspy_recorder_mode(t->rec)) {
	case HWSPY_RECORD_CAPTURE:
		return t->st.capture_failures ? "nonblocking (the BPF capture failed to start)"
					      : "exact by BPF capture";
	case HWSPY_RECORD_STOPS:
		return "exact by stops (ptrace)";
	default:
		return "nonblocking";
	}
}

/* "12s", "3m05s", "2h01m" */
static void span_text(uint64_t ns, char *text, size_t size)
{
	uint64_t s = ns / 1000000000ULL;

	if (s < 60)
		snprintf(text, size, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(text, size, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(text, size, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
}

static void line_target(struct top *t, uint64_t now_ns, struct buf *b)
{
	struct hwspy_python py;

	(void) now_ns;
	hwspy_recorder_python(t->rec, &py);
	(void) buf_printf(b, "hwspy top: %s%s%s%s, ", t->target, t->comm[0] ? " (" : "", t->comm,
			  t->comm[0] ? ")" : "");
	if (py.found && py.version[0])
		(void) buf_printf(b, "Python %s", py.version);
	else
		(void) buf_puts(b, "no Python found (yet)");
	(void) buf_printf(b, ", %s", mode_text(t));
}

static void line_events(struct top *t, uint64_t now_ns, struct buf *b)
{
	const struct record_args *o = &t->a.rec;
	char span[32];

	(void) buf_printf(b, "events: %s ", record_event_name(o, 0));
	if (o->freq)
		(void) buf_printf(b, "%" PRIu64 " Hz", o->freq);
	else
		(void) buf_printf(b, "every %" PRIu64, o->period);
	for (size_t i = 1; i < record_n_events(o); i++)
		(void) buf_printf(b, ", %s", record_event_name(o, i));
	span_text(now_ns - t->window_ns, span, sizeof(span));
	(void) buf_printf(b, " | %s since %s | %" PRIu64 " samples", span,
			  t->zeroed ? "the last reset (z)" : "start", hwspy_table_samples(t->table));
	if (t->rates.samples_ok)
		(void) buf_printf(b, ", %.0f/s", t->rates.samples_s);
	(void) buf_printf(b, ", %" PRIu64 " lost", t->rates.lost);
}

static void line_process(struct top *t, uint64_t now_ns, struct buf *b)
{
	const struct top_rates *q = &t->rates;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	(void) now_ns;
	if (q->cpu_ok)
		(void) buf_printf(b, "CPU %.0f%% (%ld cores)", q->cpu_pct, cores > 0 ? cores : 1);
	else
		(void) buf_puts(b, "CPU -");
	if (!q->sw_ok) {
		(void) buf_puts(b, " | context switches -");
		return;
	}
	(void) buf_printf(b, " | context switches %.0f/s voluntary, %.0f/s involuntary",
			  q->vol_s, q->invol_s);
	if (q->sw.read < q->sw.listed)
		(void) buf_printf(b, " (the first %zu of %zu%s threads)", q->sw.read, q->sw.listed,
				  q->sw.listed >= HWSPY_SWITCHES_LISTED ? "+" : "");
	else
		(void) buf_printf(b, " (%zu thread%s)", q->sw.read, q->sw.read == 1 ? "" : "s");
}

static void line_view(struct top *t, uint64_t now_ns, struct buf *b)
{
	const char *name;

	(void) now_ns;
	(void) buf_printf(b, "sort: %s | thread: ",
			  hwspy_table_column_name(t->table, hwspy_table_sort_column(t->table)));
	if (t->vo.tid == HWSPY_TABLE_ALL_THREADS) {
		(void) buf_printf(b, "all (%zu)", hwspy_table_n_threads(t->table));
	} else {
		name = hwspy_profile_thread_name(hwspy_recorder_profile(t->rec), (pid_t) t->vo.tid);
		(void) buf_printf(b, "%" PRIu32 " %s", t->vo.tid, name ? name : "(no name yet)");
	}
	if (t->a.rec.native)
		(void) buf_printf(b, " | native rows: %s", t->vo.hide_native ? "hidden" : "shown");
	if (t->screen)
		(void) buf_puts(b, " | h: keys");
}

/* The header's lines into b, one after another, each NUL-terminated, from starts[i]. */
static void header_lines(struct top *t, uint64_t now_ns, struct buf *b,
			 size_t starts[HEADER_LINES - 1])
{
	void (*const lines[HEADER_LINES - 1])(struct top *, uint64_t, struct buf *) = {
		line_target, line_events, line_process, line_view,
	};

	for (int i = 0; i < HEADER_LINES - 1; i++) {
		starts[i] = b->len;
		lines[i](t, now_ns, b);
		(void) buf_putc(b, '\0');
	}
}

/* The view of the table as the keys set it (a thread gone from the table: all again). */
static int make_view(struct top *t)
{
	int r = hwspy_table_view(t->table, &t->vo);

	if (r == -EINVAL) {
		t->vo.tid = HWSPY_TABLE_ALL_THREADS;
		r = hwspy_table_view(t->table, &t->vo);
	}
	return r;
}

void top_draw(struct top *t, uint64_t now_ns)
{
	int rows, cols;
	size_t starts[HEADER_LINES - 1];
	const char *text;
	struct buf b, line;

	if (!t->screen || make_view(t) < 0)
		return;
	top_screen_size(t->screen, &rows, &cols);
	buf_init(&b);
	buf_init(&line);
	top_screen_begin(t->screen);
	header_lines(t, now_ns, &b, starts);
	for (int i = 0; i < HEADER_LINES - 1 && b.data; i++) {
		buf_reset(&line);
		(void) text_cut(&line, b.data + starts[i], cols);
		top_screen_line(t->screen, i, line.len ? line.data : "", i ? TOP_PLAIN : TOP_BOLD);
	}
	(void) hwspy_table_header_text(t->table, cols, &text);
	top_screen_line(t->screen, HEADER_LINES - 1, text, TOP_REVERSE);
	t->screen_rows = rows > HEADER_LINES ? rows - HEADER_LINES : 0;
	for (size_t i = 0; i < hwspy_table_rows(t->table) && (int) i < t->screen_rows; i++) {
		if (hwspy_table_row_text(t->table, i, cols, &text) >= 0 && text[0])
			top_screen_line(t->screen, HEADER_LINES + (int) i, text, TOP_PLAIN);
	}
	if (t->help)
		top_screen_box(t->screen, help_lines, sizeof(help_lines) / sizeof(help_lines[0]));
	top_screen_end(t->screen);
	buf_release(&line);
	buf_release(&b);
	t->drawn_ns = now_ns;
}

static void move_sort(struct top *t, int by)
{
	size_t n = hwspy_table_n_columns(t->table);

	if (by < 0 && t->vo.sort > 0)
		t->vo.sort--;
	else if (by > 0 && t->vo.sort + 1 < n)
		t->vo.sort++;
}

bool top_key(struct top *t, int key)
{
	if (t->help && key != TOP_KEY_RESIZE) {
		t->help = false;        /* any key closes the help */
		return true;
	}
	switch (key) {
	case 'q':
	case 'Q':
		t->quit = true;
		return false;
	case 's':
		t->vo.sort = HWSPY_TABLE_COL_SELF;
		return true;
	case 't':
		t->vo.sort = HWSPY_TABLE_COL_TOTAL;
		return true;
	case '<':
	case '>':
		move_sort(t, key == '<' ? -1 : 1);
		return true;
	case 'T':
		t->vo.tid = hwspy_table_next_thread(t->table, t->vo.tid);
		return true;
	case 'z':
		hwspy_table_zero(t->table);
		t->window_ns = clock_now_ns();
		t->zeroed = true;
		return true;
	case 'n':
		if (t->a.rec.native)
			t->vo.hide_native = !t->vo.hide_native;
		return true;
	case 'h':
	case '?':
		t->help = true;
		return true;
	case TOP_KEY_RESIZE:
		return true;
	}
	return false;
}

void top_refresh_rates(struct top *t, uint64_t now_ns)
{
	struct top_rates *q = &t->rates;
	pid_t pid = hwspy_recorder_pid(t->rec);
	double dt = q->at_ns ? (double) (now_ns - q->at_ns) / 1e9 : 0;
	uint64_t cpu_ns, samples;
	struct hwspy_switches sw;
	bool cpu = pid > 0 && hwspy_target_cpu_ns(pid, &cpu_ns) == 0;
	bool swok = pid > 0 && hwspy_target_switches(pid, TOP_SWITCH_TASKS, &sw) == 0;

	hwspy_recorder_stats(t->rec, &t->st);
	samples = t->st.samples;
	q->lost = t->st.lost;
	q->samples_ok = dt > 0;
	if (dt > 0) {
		q->samples_s = (double) (samples - q->samples) / dt;
		q->cpu_ok = cpu && q->have_cpu;
		if (q->cpu_ok)
			q->cpu_pct = 100.0 * (double) (cpu_ns - q->cpu_ns) / 1e9 / dt;
		/* a thread that exited takes its switches out of the sum: no negative rate */
		q->sw_ok = swok && q->have_sw;
		if (q->sw_ok) {
			q->vol_s = sw.voluntary > q->sw.voluntary ?
				   (double) (sw.voluntary - q->sw.voluntary) / dt : 0;
			q->invol_s = sw.involuntary > q->sw.involuntary ?
				     (double) (sw.involuntary - q->sw.involuntary) / dt : 0;
		}
	}
	q->at_ns = now_ns;
	q->samples = samples;
	q->have_cpu = cpu;
	if (cpu)
		q->cpu_ns = cpu_ns;
	q->have_sw = swok;
	if (swok)
		q->sw = sw;
}

int top_write_text(struct top *t, FILE *f, size_t max_rows)
{
	size_t starts[HEADER_LINES - 1];
	const char *text;
	struct buf b;
	int r = make_view(t);

	if (r < 0)
		return r;
	buf_init(&b);
	header_lines(t, t->drawn_ns, &b, starts);
	for (int i = 0; i < HEADER_LINES - 1 && b.data; i++)
		fprintf(f, "%s\n", b.data + starts[i]);
	(void) hwspy_table_header_text(t->table, 0, &text);
	fprintf(f, "\n%s\n", text);
	for (size_t i = 0; i < hwspy_table_rows(t->table) && (!max_rows || i < max_rows); i++) {
		if (hwspy_table_row_text(t->table, i, 0, &text) >= 0 && text[0])
			fprintf(f, "%s\n", text);
	}
	buf_release(&b);
	return fflush(f) == 0 ? 0 : -EIO;
}
