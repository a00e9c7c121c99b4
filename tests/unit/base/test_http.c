/* http: the server's answers to good, bad, oversized, stalled and vanishing clients, and the
 * addresses http_listen() takes. The client is this process (connect() completes in the listen
 * backlog before the accept, and a small request fits the socket's buffer), or a forked child
 * where it must act while the server writes. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/http.h"

#define BIG (16u << 20)         /* more than loopback's socket buffers hold */

struct served {
	int calls;
	struct http_request req;
	char *big;
};

static int respond(void *ctx, const struct http_request *req, int *status, const char **ctype,
		   const char **body, size_t *len)
{
	struct served *s = ctx;

	s->calls++;
	s->req = *req;
	if (!strcmp(req->path, "/metrics")) {
		*status = 200;
		*ctype = "text/plain; version=0.0.4";
		*body = "hello 1\n";
		*len = 8;
	} else if (!strcmp(req->path, "/big")) {
		*status = 200;
		*body = s->big;
		*len = BIG;
	} else if (!strcmp(req->path, "/fail")) {
		return -EIO;
	} else if (!strcmp(req->path, "/nonsense")) {
		*status = 99;
	} else if (!strcmp(req->path, "/inject")) {
		*status = 200;
		*ctype = "text/plain\r\nSet-Cookie: x";
	} else {
		*status = 404;
		*body = "none\n";
		*len = 5;
	}
	return 0;
}

struct fixture {
	int fd, port;
	struct served s;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(http_listen("127.0.0.1:0", &f->fd), 0);
	f->port = http_bound_port(f->fd);
	assert_true(f->port > 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	close(f->fd);
	free(f->s.big);
	free(f);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A client connected to the server (waiting in its backlog), having sent data[0, len). */
static int client(const struct fixture *f, const char *data, size_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t) f->port) };
	struct timeval tv = { .tv_sec = 10 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *) &sin, sizeof(sin)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	if (len > 0)
		assert_int_equal(send(fd, data, len, MSG_NOSIGNAL), (ssize_t) len);
	return fd;
}

/* Everything the server sent, until it closed; closes fd. */
static char *read_all(int fd)
{
	size_t cap = 1 << 16, len = 0;
	char *text = malloc(cap);
	ssize_t n;

	assert_non_null(text);
	while ((n = recv(fd, text + len, cap - len - 1, 0)) > 0) {
		len += (size_t) n;
		if (len + 1 == cap) {
			text = realloc(text, cap *= 2);
			assert_non_null(text);
		}
	}
	assert_int_equal(n, 0);
	text[len] = '\0';
	close(fd);
	return text;
}

/* The server's answer to a request (the whole of data, then the client's end of sending, so
 * that the server need not wait for more), and what http_serve_one() returned. */
static char *exchange(struct fixture *f, const char *data, int *ret)
{
	int c = client(f, data, strlen(data));

	assert_int_equal(shutdown(c, SHUT_WR), 0);
	*ret = http_serve_one(f->fd, 2000, respond, &f->s);
	return read_all(c);
}

static void assert_answer(struct fixture *f, const char *request, const char *want_head)
{
	int r;
	char *got = exchange(f, request, &r);

	assert_int_equal(r, 0);
	if (strncmp(got, want_head, strlen(want_head)))
		fail_msg("for %s\ngot:\n%s\nwant:\n%s", request, got, want_head);
	free(got);
}

static void test_get_and_head(void **state)
{
	struct fixture *f = *state;
	int r;
	char *got;

	got = exchange(f, "GET /metrics?x=1 HTTP/1.1\r\nHost: localhost:9464\r\n"
			  "Accept: application/openmetrics-text;version=1.0.0\r\n"
			  "User-Agent: Prometheus/2.42.0\r\n\r\n", &r);
	assert_int_equal(r, 0);
	assert_string_equal(got, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
				 "Content-Length: 8\r\nConnection: close\r\n\r\nhello 1\n");
	assert_string_equal(f->s.req.method, "GET");
	assert_string_equal(f->s.req.path, "/metrics");
	assert_string_equal(f->s.req.accept, "application/openmetrics-text;version=1.0.0");
	free(got);

	got = exchange(f, "HEAD /metrics HTTP/1.0\r\n\r\n", &r);
	assert_int_equal(r, 0);
	assert_string_equal(got, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
				 "Content-Length: 8\r\nConnection: close\r\n\r\n");
	assert_string_equal(f->s.req.method, "HEAD");
	assert_string_equal(f->s.req.accept, "");
	free(got);

	/* bare LF line ends, several Accept headers joined, a 404 from respond() */
	got = exchange(f, "GET /other HTTP/1.1\nhost: x\nACCEPT: text/plain\naccept:  */*;q=0.1 \n\n",
		       &r);
	assert_int_equal(r, 0);
	assert_string_equal(got, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
				 "Content-Length: 5\r\nConnection: close\r\n\r\nnone\n");
	assert_string_equal(f->s.req.accept, "text/plain, */*;q=0.1");
	assert_int_equal(f->s.calls, 3);
	free(got);
}

static void test_accept_cut(void **state)
{
	struct fixture *f = *state;
	char req[2048], accept[1200] = "";
	int r;

	for (int i = 0; strlen(accept) < 1000; i++)
		snprintf(accept + strlen(accept), sizeof(accept) - strlen(accept), "%stype/x%d;q=0.%d",
			 i ? "," : "", i, i % 10);
	snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nHost: h\r\nAccept: %s\r\n\r\n", accept);
	free(exchange(f, req, &r));
	assert_int_equal(r, 0);
	assert_true(strlen(f->s.req.accept) < sizeof(f->s.req.accept));
	assert_true(strlen(f->s.req.accept) > sizeof(f->s.req.accept) - 30);
	assert_memory_equal(f->s.req.accept, accept, strlen(f->s.req.accept));
	assert_int_equal(accept[strlen(f->s.req.accept)], ',');
}

static void test_refused(void **state)
{
	struct fixture *f = *state;
	char long_target[400] = "GET /";
	char *got;
	int r;

	got = exchange(f, "POST /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello", &r);
	assert_int_equal(r, 0);
	assert_string_equal(got, "HTTP/1.1 405 Method Not Allowed\r\n"
				 "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 23\r\n"
				 "Connection: close\r\nAllow: GET, HEAD\r\n\r\n405 Method Not Allowed\n");
	free(got);
	assert_answer(f, "PROPFINDX / HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 405 ");
	assert_answer(f, "hello\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n");
	assert_answer(f, "GET /metrics\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET /metrics HTTP/2.0\r\nHost: h\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET  /metrics HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET metrics HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET * HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET ftp://h/metrics HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 400 ");
	/* absolute-form: the path in it */
	assert_answer(f, "GET http://h:9464/metrics?a HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 200 ");
	assert_answer(f, "GET HTTP://h:9464 HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 404 ");
	assert_string_equal(f->s.req.path, "/");
	assert_answer(f, "GET /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 400 ");        /* no Host */
	assert_answer(f, "GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET /metrics HTTP/1.1\r\nHost : h\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET /metrics HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET /metrics HTTP/1.1\r\nHost: h\r\nnocolon\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET /metrics HTTP/1.1\r\nHost: h\rx\r\n\r\n", "HTTP/1.1 400 ");
	assert_answer(f, "GET /m\x01 HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 400 ");
	memset(long_target + 5, 'a', 300);
	strcpy(long_target + 305, " HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_answer(f, long_target, "HTTP/1.1 414 URI Too Long\r\n");
	assert_int_equal(f->s.calls, 2);
}

static void test_nul_in_head(void **state)
{
	struct fixture *f = *state;
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: h\0x\r\n\r\n";
	int c = client(f, req, sizeof(req) - 1);
	char *got;

	assert_int_equal(http_serve_one(f->fd, 2000, respond, &f->s), 0);
	got = read_all(c);
	assert_memory_equal(got, "HTTP/1.1 400 ", 13);
	free(got);
	assert_int_equal(f->s.calls, 0);
}

/* A head over HTTP_HEAD_MAX: 431, and the client reads it although the server did not read
 * all it sent (no reset). */
static void test_oversized_head(void **state)
{
	struct fixture *f = *state;
	size_t n = 3 * HTTP_HEAD_MAX;
	char *req = malloc(n + 1), *got;
	int c;

	assert_non_null(req);
	memset(req, 'a', n);
	memcpy(req, "GET / HTTP/1.1\r\nHost: h\r\nX: ", 28);
	memcpy(req + n - 4, "\r\n\r\n", 4);
	c = client(f, req, n);
	assert_int_equal(http_serve_one(f->fd, 2000, respond, &f->s), 0);
	got = read_all(c);
	assert_memory_equal(got, "HTTP/1.1 431 Request Header Fields Too Large\r\n", 46);
	free(got);
	/* exactly HTTP_HEAD_MAX bytes, its end included: served */
	memset(req, 'a', HTTP_HEAD_MAX);
	memcpy(req, "GET /metrics HTTP/1.1\r\nHost: h\r\nX: ", 35);
	memcpy(req + HTTP_HEAD_MAX - 4, "\r\n\r\n", 5);
	assert_answer(f, req, "HTTP/1.1 200 OK\r\n");
	free(req);
	assert_int_equal(f->s.calls, 1);
}

static void test_nothing_waiting(void **state)
{
	struct fixture *f = *state;
	int64_t t0 = now_ms();

	assert_int_equal(http_serve_one(f->fd, 2000, respond, &f->s), -EAGAIN);
	assert_true(now_ms() - t0 < 100);
}

/* Clients that send nothing, half a head, or go: the server returns by its timeout. */
static void test_stalled_clients(void **state)
{
	struct fixture *f = *state;
	int c, r;
	int64_t t0, dt;

	c = client(f, NULL, 0);
	t0 = now_ms();
	r = http_serve_one(f->fd, 200, respond, &f->s);
	dt = now_ms() - t0;
	assert_int_equal(r, -ETIMEDOUT);
	assert_true(dt >= 190 && dt < 1500);
	close(c);

	c = client(f, "GET /metrics HTTP/1.1\r\nHo", 25);
	t0 = now_ms();
	assert_int_equal(http_serve_one(f->fd, 200, respond, &f->s), -ETIMEDOUT);
	assert_true(now_ms() - t0 < 1500);
	close(c);

	c = client(f, NULL, 0);
	close(c);
	t0 = now_ms();
	assert_int_equal(http_serve_one(f->fd, 2000, respond, &f->s), -ECONNRESET);
	assert_true(now_ms() - t0 < 1000);

	/* half a head, then its end of the connection: 400 to what is left */
	c = client(f, "GET /metrics HT", 15);
	shutdown(c, SHUT_WR);
	assert_int_equal(http_serve_one(f->fd, 2000, respond, &f->s), 0);
	free(read_all(c));
	assert_int_equal(f->s.calls, 0);
}

/* A client that never reads a big response: the server gives up at its timeout. */
static void test_stalled_reader(void **state)
{
	struct fixture *f = *state;
	static const char req[] = "GET /big HTTP/1.1\r\nHost: h\r\n\r\n";
	int c = client(f, req, sizeof(req) - 1), r;
	int64_t t0 = now_ms(), dt;

	f->s.big = calloc(1, BIG);
	assert_non_null(f->s.big);
	r = http_serve_one(f->fd, 300, respond, &f->s);
	dt = now_ms() - t0;
	assert_int_equal(r, -ETIMEDOUT);
	assert_true(dt >= 290 && dt < 2000);
	close(c);
}

/* A client that reads a little of a big response and goes (a reset): an error, no SIGPIPE
 * (SIGPIPE's default action would end this test). */
static void test_vanishing_reader(void **state)
{
	struct fixture *f = *state;
	static const char req[] = "GET /big HTTP/1.1\r\nHost: h\r\n\r\n";
	int c = client(f, req, sizeof(req) - 1), r, status;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	pid_t pid;

	f->s.big = calloc(1, BIG);
	assert_non_null(f->s.big);
	assert_int_equal(sigaction(SIGPIPE, &dfl, NULL), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char part[1000];

		(void) recv(c, part, sizeof(part), MSG_WAITALL);
		_exit(0);       /* closes c with unread data: a reset */
	}
	close(c);
	r = http_serve_one(f->fd, 5000, respond, &f->s);
	assert_true(r == -ECONNRESET || r == -EPIPE);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
}

/* A client that sent its request and closed its socket before the answer: the server's first
 * write goes out, the client's system answers it with a reset, and the next write fails with
 * EPIPE, which raises SIGPIPE unless told not to (its default action would end this test). */
static void test_closed_client(void **state)
{
	struct fixture *f = *state;
	static const char req[] = "GET /big HTTP/1.1\r\nHost: h\r\n\r\n";
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int r;

	f->s.big = calloc(1, BIG);
	assert_non_null(f->s.big);
	assert_int_equal(sigaction(SIGPIPE, &dfl, NULL), 0);
	close(client(f, req, sizeof(req) - 1));
	r = http_serve_one(f->fd, 5000, respond, &f->s);
	assert_true(r == -EPIPE || r == -ECONNRESET);
	assert_int_equal(f->s.calls, 1);
}

static void test_respond_errors(void **state)
{
	struct fixture *f = *state;
	char *got;
	int r;

	got = exchange(f, "GET /fail HTTP/1.1\r\nHost: h\r\n\r\n", &r);
	assert_int_equal(r, -EIO);
	assert_string_equal(got, "HTTP/1.1 500 Internal Server Error\r\n"
				 "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 26\r\n"
				 "Connection: close\r\n\r\n500 Internal Server Error\n");
	free(got);
	got = exchange(f, "GET /nonsense HTTP/1.1\r\nHost: h\r\n\r\n", &r);
	assert_int_equal(r, -EINVAL);
	assert_memory_equal(got, "HTTP/1.1 500 ", 13);
	free(got);
	got = exchange(f, "GET /inject HTTP/1.1\r\nHost: h\r\n\r\n", &r);
	assert_int_equal(r, -EINVAL);
	assert_memory_equal(got, "HTTP/1.1 500 ", 13);
	assert_null(strstr(got, "Set-Cookie"));
	free(got);
}

/* Bytes after the head (a pipelined request) are dropped; the response arrives whole. */
static void test_more_than_head(void **state)
{
	struct fixture *f = *state;
	char *got;
	int r;

	got = exchange(f, "GET /metrics HTTP/1.1\r\nHost: h\r\n\r\nGET /metrics HTTP/1.1\r\n", &r);
	assert_int_equal(r, 0);
	assert_string_equal(got, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
				 "Content-Length: 8\r\nConnection: close\r\n\r\nhello 1\n");
	free(got);
	assert_int_equal(f->s.calls, 1);
}

static void assert_listens_on(const char *addr, const char *want_ip)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];
	int fd, r = http_listen(addr, &fd);

	if (r == -EAFNOSUPPORT || r == -EADDRNOTAVAIL) {
		printf("# %s: not here (%s)\n", addr, strerror(-r));
		return;
	}
	assert_int_equal(r, 0);
	assert_true(http_bound_port(fd) > 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *) &ss, &len), 0);
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *) &ss)->sin_addr, ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &ss)->sin6_addr, ip, sizeof(ip));
	assert_string_equal(ip, want_ip);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
}

static void test_listen_addresses(void **state)
{
	static const char *const bad[] = {
		"", "9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
		"127.0.0.1:12a", "127.0.0.1: 80", "127.0.0.1:123456", "::1:9464", "[::1]9464",
		"[::1", "[127.0.0.1]:80", "example.com:80", "127.1:80", "1.2.3.4.5:80", "[::1]:",
		"localhost", "host name:80",
	};
	struct fixture *f = *state;
	char addr[64];
	int fd;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (http_listen(bad[i], &fd) != -EINVAL)
			fail_msg("http_listen(\"%s\") is not -EINVAL", bad[i]);
	assert_int_equal(http_listen(NULL, &fd), -EINVAL);
	assert_listens_on("127.0.0.1:0", "127.0.0.1");
	assert_listens_on(":0", "127.0.0.1");
	assert_listens_on("localhost:0", "127.0.0.1");
	assert_listens_on("0.0.0.0:0", "0.0.0.0");
	assert_listens_on("[::1]:0", "::1");
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->port);
	assert_int_equal(http_listen(addr, &fd), -EADDRINUSE);
}

/* The loopback's names, as a Host header gives them, and what a rebinding web page sends. */
static void test_loopback_hosts(void **state)
{
	static const char *const yes[] = {
		"localhost", "LocalHost:9712", "127.0.0.1", "127.0.0.1:9712", "127.9.8.7:1",
		"[::1]", "[::1]:9712",
	};
	static const char *const no[] = {
		"", "evil.example", "evil.example:9712", "localhost.evil.example", "128.0.0.1:80",
		"10.0.0.1", "[::2]:9712", "[::1", "127.0.0.1.evil:80", "0.0.0.0:9712",
	};
	struct fixture *f = *state;
	int fd;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!http_host_is_loopback(yes[i]))
			fail_msg("\"%s\" is not taken for the loopback", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (http_host_is_loopback(no[i]))
			fail_msg("\"%s\" is taken for the loopback", no[i]);
	assert_true(http_bound_loopback(f->fd));
	assert_int_equal(http_listen("0.0.0.0:0", &fd), 0);
	assert_false(http_bound_loopback(fd));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_get_and_head, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nul_in_head, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversized_head, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_waiting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stalled_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stalled_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vanishing_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_respond_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_more_than_head, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listen_addresses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loopback_hosts, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
