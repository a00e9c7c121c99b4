/* module.c: the extension module _hwspy (module.h): its exceptions and the parts' init. */
#include <errno.h>
#include <string.h>

#include "python/hwspy/module.h"
#include "include/hwspy.h"

PyObject *hwspy_py_unavailable_warning;
PyObject *hwspy_py_unavailable_error;

PyObject *hwspy_py_raise(int r, const char *what)
{
	const char *why = hwspy_reason();

	return hwspy_py_raise_why(r, why && *why ? why : what);
}

PyObject *hwspy_py_raise_why(int r, const char *why)
{
	PyObject *type;

	switch (-r) {
	case EINVAL: case ENOENT: type = PyExc_ValueError; break;
	case ESRCH: type = PyExc_ProcessLookupError; break;
	case EPERM: case EACCES: type = PyExc_PermissionError; break;
	case ENOMEM: return PyErr_NoMemory();
	default:
		return PyErr_Format(PyExc_OSError, "%s: %s", why, strerror(-r));
	}
	PyErr_SetString(type, why);
	return NULL;
}

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "hwspy._hwspy",
	.m_doc = "hwspy's engine (libhwspy) for the hwspy package: use the package, not this.",
	.m_size = -1,
};

PyMODINIT_FUNC PyInit__hwspy(void);
PyMODINIT_FUNC PyInit__hwspy(void)
{
	PyObject *m = PyModule_Create(&module_def);

	if (!m)
		return NULL;
	hwspy_py_unavailable_warning = PyErr_NewExceptionWithDoc(
		"hwspy.UnavailableEventWarning",
		"An event asked for cannot be counted or sampled on this machine (no hardware PMU, "
		"not allowed ...); the others still are.", PyExc_UserWarning, NULL);
	hwspy_py_unavailable_error = PyErr_NewExceptionWithDoc(
		"hwspy.UnavailableEventError",
		"An event that exists cannot be counted or sampled on this machine (no hardware "
		"PMU, not supported here ...): hwspy.count for an event in c.unavailable with "
		"strict=True, or where none of its events can be counted; hwspy.profile for the "
		"event it samples. An unknown event name or a bad argument is a ValueError; where "
		"this process may not sample itself at all, PermissionError.", PyExc_OSError, NULL);
	if (!hwspy_py_unavailable_warning || !hwspy_py_unavailable_error) {
		Py_DECREF(m);
		return NULL;
	}
	/* module-wide references of ours: PyModule_AddObject steals one on success */
	Py_INCREF(hwspy_py_unavailable_warning);
	Py_INCREF(hwspy_py_unavailable_error);
	if (PyModule_AddObject(m, "UnavailableEventWarning", hwspy_py_unavailable_warning) < 0 ||
	    PyModule_AddObject(m, "UnavailableEventError", hwspy_py_unavailable_error) < 0 ||
	    PyModule_AddStringConstant(m, "__version__", HWSPY_VERSION) < 0 ||
	    hwspy_py_count_init(m) < 0 || hwspy_py_profile_init(m) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
