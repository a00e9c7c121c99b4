/* What the API tests share (each test includes it after cmocka.h and include/hwspy.h). */
#ifndef HWSPY_TEST_API_H
#define HWSPY_TEST_API_H

#include <stdio.h>
#include <stdlib.h>

/* The whole file at path, NUL-terminated (the caller frees it), or NULL. */
static inline char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t) n + 1);
	if (buf && fread(buf, 1, (size_t) n, f) != (size_t) n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

#endif
