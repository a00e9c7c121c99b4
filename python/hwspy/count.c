/* count.c: hwspy.count (module.h). */
#include "python/hwspy/module.h"

int hwspy_py_count_init(PyObject *m)
{
	(void) m;
	return 0;
}
