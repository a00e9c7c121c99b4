/*
 * format: which writer a profile goes to, chosen by --format or by the output file's name, and
 * the writing itself. Shared by `hwspy record` and `hwspy convert`. Internal to cli/.
 */
#ifndef HWSPY_CLI_FORMAT_H
#define HWSPY_CLI_FORMAT_H

#include <stdio.h>

#include "output/profile.h"

enum out_format {
	FORMAT_FOLDED,          /* .folded, .txt, and any other name */
	FORMAT_SPEEDSCOPE,      /* .speedscope.json */
	FORMAT_SVG,             /* .svg: an interactive flame graph */
	FORMAT_PPROF,           /* .pb.gz, .pprof */
};

/* --format NAME ("folded", "speedscope", "svg", "pprof"): 0, or -EINVAL (logged). */
int format_parse(const char *name, enum out_format *ret);
/* The format a file name asks for by its extension (folded when none says otherwise). */
enum out_format format_of_path(const char *path);
const char *format_name(enum out_format f);
/* Writes p as f, the value column col (1 + event index) where the format has one weight;
 * command_line (or NULL) is noted where the format has room for it (pprof's comments). */
int format_write(enum out_format f, const struct profile *p, size_t col, const char *command_line,
		 FILE *out);

#endif
