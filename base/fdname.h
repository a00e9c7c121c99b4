/*
 * fdname: what a file descriptor of another process is, in a few words, for messages and wait
 * reasons ("read fd 5 (pipe)"): from readlink(/proc/PID/fd/N).
 *
 *   pipe:[N]                 "pipe"
 *   socket:[N]               "TCP socket", "UDP socket", "unix socket" where the inode is
 *                            found in /proc/PID/net/{tcp,tcp6,udp,udp6,unix} (the target's
 *                            network namespace), else "socket"
 *   anon_inode:[eventfd]     "eventfd"
 *   anon_inode:[eventpoll]   "epoll"
 *   anything else            the link as it reads: a file's path ("/var/log/app.log",
 *                            "/tmp/x (deleted)"), "anon_inode:[timerfd]", "/dev/pts/0"
 *
 * The answer is cut to fit len bytes (NUL included): a cut one ends in "...". Only the first
 * FDNAME_NET_LINES lines of each /proc/PID/net file are searched.
 * 0; -EINVAL (pid <= 0, fd < 0, len < 8), or readlink()'s errno: -ENOENT (no such fd or pid),
 * -EACCES / -EPERM (not allowed to look).
 */
#ifndef HWSPY_BASE_FDNAME_H
#define HWSPY_BASE_FDNAME_H

#include <stddef.h>
#include <sys/types.h>

#define FDNAME_NET_LINES 65536

int fdname(pid_t pid, int fd, char *buf, size_t len);
/* The same words for a link read already (n bytes, not terminated; of pid's fd, whose
 * /proc/PID/net tables name a socket). */
void fdname_link(pid_t pid, const char *link, size_t n, char *buf, size_t len);

#endif
