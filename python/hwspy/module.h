/*
 * module.h: the extension module _hwspy (CPython's limited API at 3.8, one abi3 build for
 * 3.8-3.14) over include/hwspy.h. module.c makes the module and its exceptions and calls each
 * part's init; each part (count.c, profile.c) adds its types and functions to the module.
 */
#ifndef HWSPY_PY_MODULE_H
#define HWSPY_PY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The module's own exceptions and warnings (module.c), set by its init. */
extern PyObject *hwspy_py_unavailable_warning;  /* hwspy.UnavailableEventWarning */
/* hwspy.UnavailableEventError (an OSError): an event that exists but cannot be opened on this
 * machine (no hardware PMU, not supported here): count's strict=True, or none of its events
 * opens; profile's event. An unknown name or a bad argument is a ValueError, a missing
 * privilege a PermissionError. */
extern PyObject *hwspy_py_unavailable_error;

/* Raises the Python exception for libhwspy's failure r (-errno) with hwspy_reason()'s words
 * (or what, where no reason was given): ValueError (-EINVAL, -ENOENT an unknown event),
 * ProcessLookupError (-ESRCH), PermissionError (-EPERM, -EACCES), MemoryError (-ENOMEM), else
 * OSError(errno). NULL, for `return hwspy_py_raise(r, "...");`. */
PyObject *hwspy_py_raise(int r, const char *what);
/* The same with the reason given: for a failure of another thread, whose hwspy_reason() (a
 * thread's own) was kept there. */
PyObject *hwspy_py_raise_why(int r, const char *why);

/* Each part adds itself to the module m: 0, or -1 with an exception set. */
int hwspy_py_count_init(PyObject *m);
int hwspy_py_profile_init(PyObject *m);

#endif
