/* hwspy: the subcommand table. */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", cmd_record, "sample a Python process and write a profile" },
	{ "convert", cmd_convert, "turn a folded (any tool's) or pprof file into another format" },
	{ "diff", cmd_diff, "compare two profiles: what a change made faster or slower" },
	{ "stat", cmd_stat, "count events and say what they mean, naming the functions" },
	{ "list", cmd_list, "list the events hwspy knows and whether they work here" },
	{ "top", cmd_top, "a live view of a Python process's hottest functions" },
	{ "dump", cmd_dump, "print the current stack of every thread of a Python process" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: hwspy COMMAND [OPTIONS]\n\n"
		     "hwspy samples a Python process with perf events (cycles, cache misses, page\n"
		     "faults, cpu-clock ...) and attributes them to Python functions.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'hwspy COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("hwspy %s\n", HWSPY_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	log_error("unknown command '%s'; run 'hwspy --help' for the list", argv[1]);
	return 2;
}
