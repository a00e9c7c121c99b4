/*
 * fdname: a target's file descriptor in a few words (fdname.h), from its /proc/PID/fd link and,
 * for a socket, the protocol table of the target's network namespace that lists its inode.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fdname.h"

/* The protocol tables: the field (0-based, blank separated) that holds the inode. */
static const struct {
	const char *file, *name;
	int inode_field;
} net_tables[] = {
	{ "tcp", "TCP socket", 9 },
	{ "tcp6", "TCP socket", 9 },
	{ "udp", "UDP socket", 9 },
	{ "udp6", "UDP socket", 9 },
	{ "unix", "unix socket", 6 },
};

/* The inode in field i of a table line, or 0. */
static uint64_t line_inode(const char *line, int field)
{
	const char *p = line;
	uint64_t v = 0;

	for (int i = 0; i <= field; i++) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n')
			return 0;
		if (i == field)
			break;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (uint64_t) (*p - '0');
	}
	return *p == ' ' || *p == '\t' || *p == '\n' || !*p ? v : 0;
}

/* Whether table t of pid lists inode (first FDNAME_NET_LINES lines; lines cut at the buffer
 * are read on as one more line, whose fields then do not parse). */
static bool in_table(pid_t pid, size_t t, uint64_t inode)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/%s", (int) pid, net_tables[t].file);
	f = fopen(path, "re");
	if (!f)
		return false;
	for (unsigned n = 0; n < FDNAME_NET_LINES && !found && fgets(line, sizeof(line), f); n++)
		found = n > 0 && line_inode(line, net_tables[t].inode_field) == inode;
	fclose(f);
	return found;
}

static const char *socket_kind(pid_t pid, uint64_t inode)
{
	for (size_t t = 0; inode && t < sizeof(net_tables) / sizeof(net_tables[0]); t++)
		if (in_table(pid, t, inode))
			return net_tables[t].name;
	return "socket";
}

/* s into buf (len >= 8), cut with "..." when it does not fit. */
static void put(char *buf, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n < len) {
		memcpy(buf, s, n + 1);
		return;
	}
	memcpy(buf, s, len - 4);
	memcpy(buf + len - 4, "...", 4);
}

void fdname_link(pid_t pid, const char *link, size_t n, char *buf, size_t len)
{
	char text[PATH_MAX + 1];
	uint64_t inode;
	int end = 0;

	n = n < sizeof(text) - 1 ? n : sizeof(text) - 1;
	memcpy(text, link, n);
	text[n] = '\0';
	if (!strcmp(text, "anon_inode:[eventfd]")) {
		put(buf, len, "eventfd");
	} else if (!strcmp(text, "anon_inode:[eventpoll]")) {
		put(buf, len, "epoll");
	} else if (sscanf(text, "pipe:[%" SCNu64 "]%n", &inode, &end) == 1 && (size_t) end == n) {
		put(buf, len, "pipe");
	} else if (sscanf(text, "socket:[%" SCNu64 "]%n", &inode, &end) == 1 &&
		   (size_t) end == n) {
		put(buf, len, socket_kind(pid, inode));
	} else {
		put(buf, len, text);
	}
}

int fdname(pid_t pid, int fd, char *buf, size_t len)
{
	char path[64], link[PATH_MAX + 1];
	ssize_t n;

	if (pid <= 0 || fd < 0 || !buf || len < 8)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) pid, fd);
	/* readlink() does not terminate, and fills the buffer when the link is longer */
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	fdname_link(pid, link, (size_t) n, buf, len);
	return 0;
}
