/*
 * cli: the subcommands. Each cmd_* parses its own options (getopt_long), does its work through
 * the stage libraries and is the only code that prints: one line per problem, through base/log.h.
 * Returns the process exit status.
 */
#ifndef HWSPY_CLI_H
#define HWSPY_CLI_H

int cmd_record(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_dump(int argc, char **argv);

#endif
