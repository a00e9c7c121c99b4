/* hwspy: the subcommand table (the commands' summaries and help: doc/options.txt). */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/options.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "record", cmd_record }, { "convert", cmd_convert }, { "diff", cmd_diff },
	{ "stat", cmd_stat }, { "list", cmd_list }, { "top", cmd_top }, { "dump", cmd_dump },
	{ "monitor", cmd_monitor },
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(cli_main_help, stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		fputs(cli_main_help, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("hwspy %s\n", HWSPY_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	for (const struct cli_refusal *f = cli_main_refusals; f->spelling; f++)
		if (!strcmp(argv[1], f->spelling))
			return log_error("unknown command '%s': %s", argv[1], f->text), 2;
	log_error("unknown command '%s'; run 'hwspy --help' for the list", argv[1]);
	return 2;
}
