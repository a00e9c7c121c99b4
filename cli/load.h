/* load: a profile from a file. TEMPORARY (folded only) until the pprof reader lands. */
#ifndef HWSPY_CLI_LOAD_H
#define HWSPY_CLI_LOAD_H

#include "output/profile.h"

struct profile *profile_load(const char *path);

#endif
