#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/load.h"

struct profile *profile_load(const char *path)
{
	const char *event = "samples";
	struct folded_read_error err = { 0 };
	FILE *in = strcmp(path, "-") ? fopen(path, "re") : stdin;
	struct profile *p;
	int r;

	if (!in) {
		log_errno(-errno, "cannot read '%s'", path);
		return NULL;
	}
	p = profile_new(&event, 1);
	r = p ? folded_read(in, p, &err) : -ENOMEM;
	if (in != stdin)
		(void) fclose(in);
	if (r == -EINVAL || r == -E2BIG || r == -EOVERFLOW)
		log_error("%s:%llu: %s; a folded line is 'frame;frame;...;leaf COUNT'", path,
			  (unsigned long long) err.line, err.reason ? err.reason : "malformed line");
	else if (r < 0)
		log_errno(r, "cannot read '%s'", path);
	if (r < 0) {
		profile_free(p);
		return NULL;
	}
	return p;
}
