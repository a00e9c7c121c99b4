/* top_view: what `hwspy top` shows (top.h): the header, the live table, the keys and their
 * help, and the same as plain text (--once, and the last table at exit). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/text.h"
#include "cli/top.h"

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

static const char *const modes[] = {
	[HWSPY_LIVE_NONBLOCKING] = "nonblocking",
	[HWSPY_LIVE_CAPTURE] = "exact by BPF capture",
	[HWSPY_LIVE_CAPTURE_FAILED] = "nonblocking (the BPF capture failed to start)",
	[HWSPY_LIVE_STOPS] = "exact by stops (ptrace)",
};

static const struct { int key; enum hwspy_table_step step; } steps[] = {
	{ 's', HWSPY_TABLE_SORT_SELF }, { 't', HWSPY_TABLE_SORT_TOTAL },
	{ '<', HWSPY_TABLE_SORT_LEFT }, { '>', HWSPY_TABLE_SORT_RIGHT },
	{ 'T', HWSPY_TABLE_NEXT_THREAD }, { 'n', HWSPY_TABLE_NATIVE },
};

/* The header's four lines, each ended by '\n', as of t->drawn_ns. */
static void header(struct top *t, struct buf *b)
{
	const struct record_args *o = &t->o;
	const struct hwspy_live_rates *q = &t->rates;
	uint64_t s = (t->drawn_ns - t->window_ns) / 1000000000ULL;
	struct hwspy_python py;
	const char *name;

	hwspy_recorder_python(t->rec, &py);
	(void) buf_printf(b, "hwspy top: %s%s%s%s, ", t->target, q->comm[0] ? " (" : "", q->comm,
			  q->comm[0] ? ")" : "");
	if (py.found && py.version[0])
		(void) buf_printf(b, "Python %s", py.version);
	else
		(void) buf_puts(b, "no Python found (yet)");
	(void) buf_printf(b, ", %s\nevents: %s ", modes[hwspy_live_mode(t->rec)],
			  record_event_name(o, 0));
	if (o->freq)
		(void) buf_printf(b, "%" PRIu64 " Hz", o->freq);
	else
		(void) buf_printf(b, "every %" PRIu64, o->period);
	for (size_t i = 1; i < record_n_events(o); i++)
		(void) buf_printf(b, ", %s", record_event_name(o, i));
	if (s < 60)
		(void) buf_printf(b, " | %" PRIu64 "s", s);
	else if (s < 3600)
		(void) buf_printf(b, " | %" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		(void) buf_printf(b, " | %" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
	(void) buf_printf(b, " since %s | %" PRIu64 " samples", t->zeroed ? "the last reset (z)" :
			  "start", hwspy_table_samples(t->table));
	if (q->samples_ok)
		(void) buf_printf(b, ", %.0f/s", q->samples_s);
	(void) buf_printf(b, ", %" PRIu64 " lost\n", q->lost);
	if (q->cpu_ok)
		(void) buf_printf(b, "CPU %.0f%% (%ld cores)", q->cpu_pct, q->cores);
	else
		(void) buf_puts(b, "CPU -");
	if (!q->sw_ok)
		(void) buf_puts(b, " | context switches -");
	else
		(void) buf_printf(b, " | context switches %.0f/s voluntary, %.0f/s involuntary",
				  q->vol_s, q->invol_s);
	if (q->sw_ok && q->sw.read < q->sw.listed)
		(void) buf_printf(b, " (the first %zu of %zu%s threads)", q->sw.read, q->sw.listed,
				  q->sw.listed >= HWSPY_SWITCHES_LISTED ? "+" : "");
	else if (q->sw_ok)
		(void) buf_printf(b, " (%zu thread%s)", q->sw.read, q->sw.read == 1 ? "" : "s");
	(void) buf_printf(b, "\nsort: %s | thread: ",
			  hwspy_table_column_name(t->table, hwspy_table_sort_column(t->table)));
	if (t->vo.tid == HWSPY_TABLE_ALL_THREADS)
		(void) buf_printf(b, "all (%zu)", hwspy_table_n_threads(t->table));
	else if ((name = hwspy_profile_thread_name(hwspy_recorder_profile(t->rec),
						   (pid_t) t->vo.tid)))
		(void) buf_printf(b, "%" PRIu32 " %s", t->vo.tid, name);
	else
		(void) buf_printf(b, "%" PRIu32 " (no name yet)", t->vo.tid);
	if (o->native)
		(void) buf_printf(b, " | native rows: %s", t->vo.hide_native ? "hidden" : "shown");
	(void) buf_puts(b, t->screen ? " | h: keys\n" : "\n");
}

void top_draw(struct top *t, uint64_t now_ns)
{
	int rows, cols, y = 0;
	const char *text;
	struct buf b, line;

	if (!t->screen || hwspy_table_view(t->table, &t->vo) < 0)
		return;
	t->drawn_ns = now_ns;
	buf_init(&b);
	buf_init(&line);
	top_screen_begin(t->screen, &rows, &cols);
	header(t, &b);
	for (char *p = b.data, *nl; (nl = strchr(p, '\n')); p = nl + 1, y++) {
		*nl = '\0';
		buf_reset(&line);
		(void) text_cut(&line, p, cols);
		top_screen_line(t->screen, y, line.data, y ? TOP_PLAIN : TOP_BOLD);
	}
	(void) hwspy_table_header_text(t->table, cols, &text);
	top_screen_line(t->screen, y++, text, TOP_REVERSE);
	t->screen_rows = rows > y ? rows - y : 0;
	for (size_t i = 0; i < hwspy_table_rows(t->table) && (int) i < t->screen_rows; i++)
		if (hwspy_table_row_text(t->table, i, cols, &text) >= 0 && text[0])
			top_screen_line(t->screen, y + (int) i, text, TOP_PLAIN);
	if (t->help)
		top_screen_box(t->screen, help_lines, sizeof(help_lines) / sizeof(help_lines[0]));
	top_screen_end(t->screen);
	buf_release(&line);
	buf_release(&b);
}

bool top_key(struct top *t, int key)
{
	if (t->help && key != TOP_KEY_RESIZE) {
		t->help = false;        /* any key closes the help */
		return true;
	}
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (steps[i].key != key)
			continue;
		if (key != 'n' || t->o.native)
			hwspy_table_step(t->table, &t->vo, steps[i].step);
		return true;
	}
	if (key == 'z') {
		hwspy_table_zero(t->table);
		t->window_ns = clock_now_ns();
		t->zeroed = true;
	}
	t->quit = t->quit || key == 'q' || key == 'Q';
	t->help = t->help || key == 'h' || key == '?';
	return t->help || key == 'z' || key == TOP_KEY_RESIZE;
}

int top_write_text(struct top *t, FILE *f, size_t max_rows)
{
	const char *text;
	struct buf b;
	int r = hwspy_table_view(t->table, &t->vo);

	if (r < 0)
		return r;
	buf_init(&b);
	header(t, &b);
	r = hwspy_table_text(t->table, max_rows, &text);
	if (r >= 0)
		fprintf(f, "%s\n%s", b.data, text);
	buf_release(&b);
	return r < 0 ? r : fflush(f) == 0 ? 0 : -EIO;
}
