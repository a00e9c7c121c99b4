/* profile.c: hwspy.profile (module.h). */
#include "python/hwspy/module.h"

int hwspy_py_profile_init(PyObject *m)
{
	(void) m;
	return 0;
}
