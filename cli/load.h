/*
 * load: reads the profile file a command is given (`hwspy convert IN`, `hwspy diff BEFORE
 * AFTER`), whatever its format (hwspy_profile_load(): told by its content). Internal to cli/.
 *
 * On failure, load_profile() logs ONE line (hwspy_profile_load()'s reason: "cannot read 'NAME':
 * ...", "NAME:LINE: ...; a folded line is 'frame;...;leaf COUNT'", "NAME: not a valid pprof
 * profile: ...", "out of memory reading 'NAME'") and returns NULL; the caller only exits
 * (status 1).
 */
#ifndef HWSPY_CLI_LOAD_H
#define HWSPY_CLI_LOAD_H

#include "include/hwspy.h"

/* The profile in the file at path ("-": standard input), owned by the caller
 * (hwspy_profile_free()), or NULL after one line was logged. */
struct hwspy_profile *load_profile(const char *path);

#endif
