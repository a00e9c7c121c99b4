/* hwspy.c: the common part of hwspy.h (version, reasons); see lib/internal.h */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/internal.h"

static _Thread_local char reason[512];

const char *hwspy_version(void)
{
	return HWSPY_VERSION;
}

const char *hwspy_reason(void)
{
	return reason;
}

void lib_reason_clear(void)
{
	reason[0] = '\0';
}

static int vfail(int r, bool with_errno, const char *fmt, va_list ap)
{
	int n = vsnprintf(reason, sizeof(reason), fmt, ap);

	if (n < 0)
		reason[0] = '\0';
	else if (with_errno && (size_t) n < sizeof(reason))
		snprintf(reason + n, sizeof(reason) - (size_t) n, ": %s", strerror(-r));
	return r;
}

int lib_fail(int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r = vfail(r, false, fmt, ap);
	va_end(ap);
	return r;
}

int lib_fail_errno(int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r = vfail(r, true, fmt, ap);
	va_end(ap);
	return r;
}
