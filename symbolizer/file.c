/*
 * file.c: the small leaves every part of symbolizer/ may use (reading a whole file, the
 * basename of a path). They call nothing else of the folder.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer/symbolizer_internal.h"

int sym_read_file(const char *path, char **ret, size_t *ret_len, size_t max)
{
	size_t len = 0, cap = 1 << 16;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		(void) close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= max) {
				break;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				(void) close(fd);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			int r = -errno;

			if (r == -EINTR)
				continue;
			free(buf);
			(void) close(fd);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	(void) close(fd);
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

const char *sym_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}
