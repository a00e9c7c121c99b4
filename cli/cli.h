/* cli: the subcommands. Each cmd_* parses its options, works through libhwspy, prints (one line
 * per problem, base/log.h) and returns the exit status. */
#ifndef HWSPY_CLI_H
#define HWSPY_CLI_H

int cmd_record(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_monitor(int argc, char **argv);

#endif
