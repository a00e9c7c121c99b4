/* opts: getopt_long() over a command's generated tables, usage errors in one line (opts.h). */
#include <stdbool.h>
#include <string.h>

#include "base/log.h"
#include "cli/opts.h"

void cli_help(const struct cli_opts *o, FILE *out)
{
	fputs(o->help, out);
}

/* Edit distance of a and b (each under 64 bytes), else a large one. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], prev, cur;

	if (la >= 64 || lb >= 64)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			cur = row[j];
			row[j] = a[i - 1] == b[j - 1] ? prev : 1 + (prev < cur ? prev : cur);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			prev = cur;
		}
	}
	return row[lb];
}

/* The one line for what argv[optind - 1] (spelled as name) got wrong (getopt gave r). */
static void usage_error(const struct cli_opts *o, int r, const char *name)
{
	const struct option *best = NULL, *l;
	size_t d, best_d = 3, n = 0;

	for (const struct cli_refusal *f = o->refusals; f->spelling; f++)
		if (!strcmp(f->spelling, name)) {
			log_error("%s", f->text);
			return;
		}
	if (r == ':') {
		log_error("%s needs a value (see 'hwspy %s --help')", name, o->command);
		return;
	}
	if (!strncmp(name, "--", 2)) {
		for (l = o->longopts; l->name; l++) {
			n += !strncmp(l->name, name + 2, strlen(name + 2));
			d = distance(l->name, name + 2);
			if (d < best_d || (d == best_d && best && strlen(l->name) < strlen(best->name)))
				best = l, best_d = d;
		}
		if (n > 1) {
			log_error("'%s' could be more than one option of hwspy %s: spell it out (see "
				  "'hwspy %s --help')", name, o->command, o->command);
			return;
		}
		if (best && best_d == 0) {
			log_error("%s takes no value", name);
			return;
		}
	}
	if (best)
		log_error("unknown option '%s' for hwspy %s; did you mean --%s? ('hwspy %s --help' "
			  "lists them)", name, o->command, best->name, o->command);
	else
		log_error("unknown option '%s' for hwspy %s; 'hwspy %s --help' lists them", name,
			  o->command, o->command);
}

int cli_getopt(const struct cli_opts *o, int argc, char **argv)
{
	char name[64];
	const char *arg;
	int c;

	opterr = 0;
	do
		c = getopt_long(argc, argv, o->shortopts, o->longopts, NULL);
	while (c > 0 && c < 0x100 && strchr(o->ignored, c));
	for (const struct cli_alias *a = o->aliases; c > 0 && a->c; a++)
		if (a->c == c)
			return a->to;
	if (c != '?' && c != ':')
		return c;
	/* a long option as written (up to its '='), or the short one getopt names */
	arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (!strncmp(arg, "--", 2))
		snprintf(name, sizeof(name), "%.*s", (int) strcspn(arg, "="), arg);
	else
		snprintf(name, sizeof(name), "-%c", optopt ? optopt : '?');
	usage_error(o, c, name);
	return '?';
}
