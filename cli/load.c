/* load: a profile file of any format, its failure said in one line (load.h). */
#include "base/log.h"
#include "cli/load.h"
#include "output/output.h"

struct profile *load_profile(const char *path)
{
	char why[512];
	struct profile *p;

	if (profile_load(path, &p, why, sizeof(why)) < 0)
		log_error("%s", why);
	return p;
}
