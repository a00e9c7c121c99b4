/* base/fdname: this process's own descriptors as another process would see them: a pipe, a
 * unix socket pair, TCP and UDP sockets on the loopback, an eventfd, an epoll, a file (also
 * one with a long path, cut), a closed descriptor and bad arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/fdname.h"

static void expect(int fd, const char *want)
{
	char buf[256];

	assert_true(fd >= 0);
	assert_int_equal(fdname(getpid(), fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
}

static void test_pipe_socket(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int p[2], sp[2], tcp, udp;

	(void) state;
	assert_int_equal(pipe(p), 0);
	expect(p[0], "pipe");
	expect(p[1], "pipe");
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	expect(sp[0], "unix socket");
	tcp = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(tcp, (struct sockaddr *) &a, sizeof(a)), 0);
	assert_int_equal(listen(tcp, 1), 0);
	expect(tcp, "TCP socket");
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	assert_int_equal(bind(udp, (struct sockaddr *) &a, sizeof(a)), 0);
	expect(udp, "UDP socket");
	close(p[0]);
	close(p[1]);
	close(sp[0]);
	close(sp[1]);
	close(tcp);
	close(udp);
}

static void test_anon(void **state)
{
	int e = eventfd(0, 0), ep = epoll_create1(0);

	(void) state;
	expect(e, "eventfd");
	expect(ep, "epoll");
	close(e);
	close(ep);
}

static void test_file(void **state)
{
	char dir[] = "/tmp/hwspy-fdname-XXXXXX", path[512], buf[256], small[16];
	int fd;

	(void) state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%0200d", dir, 7);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	/* 256 bytes hold it */
	expect(fd, path);
	/* cut: the first 12 bytes and "..." */
	assert_int_equal(fdname(getpid(), fd, small, sizeof(small)), 0);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, path, sizeof(small) - 4);
	assert_string_equal(small + sizeof(small) - 4, "...");
	/* deleted: the link says so */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(fdname(getpid(), fd, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "(deleted)"));
	close(fd);
	assert_int_equal(rmdir(dir), 0);
}

static void test_errors(void **state)
{
	char buf[64];
	int p[2];

	(void) state;
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	assert_int_equal(fdname(getpid(), p[0], buf, sizeof(buf)), -ENOENT);
	assert_int_equal(fdname(getpid(), -1, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(fdname(0, 1, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(fdname(getpid(), p[1], buf, 4), -EINVAL);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipe_socket),
		cmocka_unit_test(test_anon),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
