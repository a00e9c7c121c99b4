#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum log_level log_level = LOG_NORMAL;

static void log_line(const char *fmt, va_list ap, int r)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (r < 0)
		fprintf(stderr, "hwspy: %s: %s\n", msg, strerror(-r));
	else
		fprintf(stderr, "hwspy: %s\n", msg);
}

void log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line(fmt, ap, 0);
	va_end(ap);
}

int log_errno(int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line(fmt, ap, r);
	va_end(ap);
	return r;
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	if (log_level < LOG_NORMAL)
		return;
	va_start(ap, fmt);
	log_line(fmt, ap, 0);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_level < LOG_VERBOSE)
		return;
	va_start(ap, fmt);
	log_line(fmt, ap, 0);
	va_end(ap);
}
