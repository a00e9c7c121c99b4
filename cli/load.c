/* load: a profile file of any format, its failure said in one line (load.h). */
#include "base/log.h"
#include "cli/load.h"

struct hwspy_profile *load_profile(const char *path)
{
	struct hwspy_profile *p;

	if (hwspy_profile_load(path, &p) < 0)
		log_error("%s", hwspy_reason());
	return p;
}
