/* http: a one-request-per-connection HTTP/1.1 server for a poll() loop (see http.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/http.h"

/* How long, at most, the client's end is waited for after a response to a request not read
 * to its end (within the deadline), and how much of what it sends meanwhile is dropped. */
#define HTTP_LINGER_MS 100
#define HTTP_LINGER_BYTES (1u << 20)

#define ALLOW_LINE "Allow: GET, HEAD\r\n"

/* ---- listening ---------------------------------------------------------------------------- */

/* The port in s: 1 to 5 digits, at most 65535; else -1. */
static int parse_port(const char *s)
{
	int port = 0;
	size_t n = 0;

	for (; s[n] >= '0' && s[n] <= '9'; n++)
		port = port * 10 + (s[n] - '0');
	return n >= 1 && n <= 5 && s[n] == '\0' && port <= 65535 ? port : -1;
}

/* addr as a socket address in *ss (*ret_len bytes), or -EINVAL. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *ret_len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *) ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) ss;
	const char *host = addr, *end, *port_text;
	char text[INET6_ADDRSTRLEN];
	bool v6 = addr[0] == '[';
	int port;

	if (v6) {
		host++;
		end = strchr(host, ']');
		if (end == NULL || end[1] != ':')
			return -EINVAL;
		port_text = end + 2;
	} else {
		end = strchr(addr, ':');
		if (end == NULL || strchr(end + 1, ':') != NULL)
			return -EINVAL;    /* an IPv6 address wants its brackets */
		port_text = end + 1;
	}
	port = parse_port(port_text);
	if (port < 0 || (size_t) (end - host) >= sizeof(text))
		return -EINVAL;
	memcpy(text, host, (size_t) (end - host));
	text[end - host] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (v6) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t) port);
		*ret_len = sizeof(*sin6);
		return inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	if (text[0] == '\0' || !strcasecmp(text, "localhost"))
		strcpy(text, "127.0.0.1");
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t) port);
	*ret_len = sizeof(*sin);
	return inet_pton(AF_INET, text, &sin->sin_addr) == 1 ? 0 : -EINVAL;
}

int http_listen(const char *addr, int *ret_fd)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, r;

	if (addr == NULL)
		return -EINVAL;
	r = parse_addr(addr, &ss, &len);
	if (r < 0)
		return r;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *) &ss, len) < 0 || listen(fd, 16) < 0) {
		r = -errno;
		(void) close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

int http_bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *) &ss, &len) < 0)
		return -errno;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *) &ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
	return -EAFNOSUPPORT;
}

bool http_bound_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *) &ss, &len) < 0)
		return false;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *) &ss)->sin_addr.s_addr) >> 24) == 127;
	return ss.ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *) &ss)->sin6_addr);
}

bool http_host_is_loopback(const char *host)
{
	char name[256];
	const char *colon;
	struct in_addr a;
	size_t n;

	if (host[0] == '[')
		return !strncmp(host, "[::1]", 5) && (host[5] == '\0' || host[5] == ':');
	colon = strchr(host, ':');
	n = colon ? (size_t) (colon - host) : strlen(host);
	if (n >= sizeof(name))
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	if (!strcasecmp(name, "localhost"))
		return true;
	return inet_pton(AF_INET, name, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* ---- waiting, reading, writing ------------------------------------------------------------ */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd has events or deadline (ms of now_ms()) passes: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int) (left > 60000 ? 60000 : left));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* The length of the head in buf[0, len) (through its empty line), or 0 if it has not ended. */
static size_t head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++)
		if (buf[i] == '\n' && (buf[i + 1] == '\n' ||
				       (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')))
			return i + (buf[i + 1] == '\n' ? 2 : 3);
	return 0;
}

/* Reads into buf (HTTP_HEAD_MAX bytes) until the head has ended: its length, with *ret_len the
 * bytes read; -ENOSPC (no end in HTTP_HEAD_MAX bytes: 431), -EPROTO (the client ended its
 * side inside the head: 400), -ECONNRESET (it ended it before sending anything), -ETIMEDOUT,
 * -errno. */
static int read_head(int fd, int64_t deadline, char *buf, size_t *ret_len)
{
	size_t len = 0, end;

	for (;;) {
		ssize_t n = recv(fd, buf + len, HTTP_HEAD_MAX - len, MSG_DONTWAIT);
		int r;

		if (n > 0) {
			len += (size_t) n;
			*ret_len = len;
			end = head_end(buf, len);
			if (end > 0)
				return (int) end;
			if (len == HTTP_HEAD_MAX)
				return -ENOSPC;
			continue;
		}
		if (n == 0)
			return len > 0 ? -EPROTO : -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		r = wait_fd(fd, POLLIN, deadline);
		if (r < 0)
			return r;
	}
}

/* Writes iov[0, n) whole before deadline: 0, -ETIMEDOUT, -EPIPE, -ECONNRESET, -errno. */
static int send_all(int fd, struct iovec *iov, int n, int64_t deadline)
{
	while (n > 0) {
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t) n };
		ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		int r;

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			r = wait_fd(fd, POLLOUT, deadline);
			if (r < 0)
				return r;
			continue;
		}
		while (n > 0 && (size_t) w >= iov->iov_len) {
			w -= (ssize_t) iov->iov_len;
			iov++, n--;
		}
		if (n > 0) {
			iov->iov_base = (char *) iov->iov_base + w;
			iov->iov_len -= (size_t) w;
		}
	}
	return 0;
}

/* After the response: reads and drops what the client still sends until it ends its side,
 * HTTP_LINGER_MS pass, HTTP_LINGER_BYTES come, or the deadline (closing a socket with unread
 * data resets the connection, and a reset can cost the client the response it has not read). */
static void linger(int fd, int64_t deadline)
{
	int64_t until = now_ms() + HTTP_LINGER_MS;
	size_t dropped = 0;
	char scratch[4096];

	if (until > deadline)
		until = deadline;
	while (dropped < HTTP_LINGER_BYTES) {
		ssize_t n = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return;
		if (n > 0)
			dropped += (size_t) n;
		else if (n < 0 && errno != EINTR && wait_fd(fd, POLLIN, until) < 0)
			return;
	}
}

/* ---- the request head ----------------------------------------------------------------------- */

static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* The next line of the head at *p (before end), without its "\n" or "\r\n", in *ret_len;
 * *p moves past it. NULL when none is left. */
static const char *next_line(const char **p, const char *end, size_t *ret_len)
{
	const char *line = *p, *nl = memchr(line, '\n', (size_t) (end - line));

	if (nl == NULL)
		return NULL;
	*p = nl + 1;
	*ret_len = (size_t) (nl - line) - (nl > line && nl[-1] == '\r');
	return line;
}

/* [*s, *s + *n) without spaces and tabs at either end. */
static void trim_ows(const char **s, size_t *n)
{
	while (*n > 0 && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* Adds an Accept header's value to req->accept (joined by ", "), cut after its last whole
 * media range that fits. */
static void add_accept(struct http_request *req, const char *v, size_t n)
{
	size_t have = strlen(req->accept), sep = have ? 2 : 0, room = sizeof(req->accept) - 1;

	if (n == 0)
		return;
	while (have + sep + n > room) {
		const char *comma = memrchr(v, ',', n);

		if (comma == NULL)
			return;
		n = (size_t) (comma - v);
	}
	memcpy(req->accept + have, ", ", sep);
	memcpy(req->accept + have + sep, v, n);
	req->accept[have + sep + n] = '\0';
}

/* The request line "METHOD TARGET HTTP/1.x" into req: 0, or the status to answer (400, 414);
 * *ret_http11: HTTP/1.1 or later. */
static int parse_request_line(const char *s, size_t n, struct http_request *req, bool *ret_http11)
{
	const char *sp1 = memchr(s, ' ', n), *sp2, *target, *q;
	size_t mlen, tlen, vlen;

	if (sp1 == NULL)
		return 400;
	mlen = (size_t) (sp1 - s);
	target = sp1 + 1;
	sp2 = memchr(target, ' ', (size_t) (s + n - target));
	if (sp2 == NULL || mlen == 0)
		return 400;
	tlen = (size_t) (sp2 - target);
	vlen = (size_t) (s + n - sp2 - 1);
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar((unsigned char) s[i]))
			return 400;
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char) target[i] <= ' ' || (unsigned char) target[i] >= 0x7f)
			return 400;
	if (vlen != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) || sp2[8] < '0' || sp2[8] > '9' ||
	    tlen == 0)
		return 400;
	*ret_http11 = sp2[8] >= '1';
	/* a method too long for req->method is none of those served */
	snprintf(req->method, sizeof(req->method), "%.*s", (int) mlen, s);
	if (mlen >= sizeof(req->method))
		req->method[0] = '\0';
	if (*target != '/') {
		/* absolute-form, as to a proxy: http://host:port/path */
		const char *slash;

		if (tlen > 7 && !strncasecmp(target, "http://", 7))
			slash = memchr(target + 7, '/', tlen - 7);
		else if (tlen > 8 && !strncasecmp(target, "https://", 8))
			slash = memchr(target + 8, '/', tlen - 8);
		else
			return 400;
		tlen -= slash ? (size_t) (slash - target) : tlen;
		target = slash ? slash : "/";
		tlen += slash ? 0 : 1;
	}
	q = memchr(target, '?', tlen);
	if (q != NULL)
		tlen = (size_t) (q - target);
	if (tlen >= sizeof(req->path))
		return 414;
	memcpy(req->path, target, tlen);
	req->path[tlen] = '\0';
	return 0;
}

/* The head head[0, len) (ending in its empty line) into req: 0, or the status to answer (400,
 * 414). *ret_body: a body follows (Content-Length not 0, Transfer-Encoding). */
static int parse_head(const char *head, size_t len, struct http_request *req, bool *ret_body)
{
	const char *p = head, *end = head + len, *line;
	size_t n, hosts = 0;
	bool http11 = false;
	int status;

	memset(req, 0, sizeof(*req));
	if (memchr(head, '\0', len) != NULL)
		return 400;
	line = next_line(&p, end, &n);
	if (line == NULL)
		return 400;
	status = parse_request_line(line, n, req, &http11);
	if (status != 0)
		return status;
	while ((line = next_line(&p, end, &n)) != NULL && n > 0) {
		const char *colon = memchr(line, ':', n), *v;
		size_t vn;

		if (colon == NULL || colon == line || memchr(line, '\r', n) != NULL)
			return 400;
		for (const char *c = line; c < colon; c++)
			if (!is_tchar((unsigned char) *c))
				return 400;   /* also a space before ':' and obs-fold */
		v = colon + 1;
		vn = (size_t) (line + n - v);
		trim_ows(&v, &vn);
		if (colon - line == 4 && !strncasecmp(line, "host", 4)) {
			hosts++;
			snprintf(req->host, sizeof(req->host), "%.*s", (int) vn, v);
		}
		else if (colon - line == 6 && !strncasecmp(line, "accept", 6))
			add_accept(req, v, vn);
		else if ((colon - line == 14 && !strncasecmp(line, "content-length", 14) &&
			  !(vn == 1 && *v == '0')) ||
			 (colon - line == 17 && !strncasecmp(line, "transfer-encoding", 17)))
			*ret_body = true;
	}
	if (hosts > 1 || (http11 && hosts == 0))
		return 400;
	return 0;
}

/* ---- the response --------------------------------------------------------------------------- */

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
	}
}

/* A Content-Type fit for the head: printable ASCII, not too long. */
static bool valid_ctype(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if ((unsigned char) s[n] < ' ' || (unsigned char) s[n] >= 0x7f)
			return false;
	return n > 0 && n < 200;
}

static int send_response(int fd, int64_t deadline, int status, const char *ctype,
			 const char *body, size_t len, bool head_only)
{
	char head[512];
	struct iovec iov[2];
	int n;

	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n%s\r\n", status, reason(status),
		     ctype, len, status == 405 ? ALLOW_LINE : "");
	iov[0] = (struct iovec) { .iov_base = head, .iov_len = (size_t) n };
	iov[1] = (struct iovec) { .iov_base = (void *) body, .iov_len = head_only ? 0 : len };
	return send_all(fd, iov, head_only || len == 0 ? 1 : 2, deadline);
}

/* The text/plain answer to a request not served: its status line's words. */
static int send_error(int fd, int64_t deadline, int status)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "%d %s\n", status, reason(status));

	return send_response(fd, deadline, status, "text/plain; charset=utf-8", body, (size_t) n,
			     false);
}

/* Asks respond() and sends its answer, or a 500 when it fails (its error in *ret_err) or
 * answers nonsense (*ret_err -EINVAL). 0 or send_all()'s error. */
static int respond_to(int fd, int64_t deadline, const struct http_request *req,
		      http_respond_fn respond, void *ctx, int *ret_err)
{
	const char *ctype = NULL, *body = NULL;
	int status = 500, r;
	size_t len = 0;

	r = respond(ctx, req, &status, &ctype, &body, &len);
	if (r >= 0 && (status < 200 || status > 599 || status == 204 || status == 205 ||
		       status == 304 || (ctype != NULL && !valid_ctype(ctype)) ||
		       (body == NULL && len > 0)))
		r = -EINVAL;
	*ret_err = r < 0 ? r : 0;
	if (r < 0)
		return send_error(fd, deadline, 500);
	return send_response(fd, deadline, status, ctype ? ctype : "text/plain; charset=utf-8",
			     body, len, !strcmp(req->method, "HEAD"));
}

static bool accept_retry(int e)
{
	return e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNABORTED || e == EPROTO ||
	       e == ENETDOWN || e == ENOPROTOOPT || e == EHOSTDOWN || e == ENONET ||
	       e == EHOSTUNREACH || e == EOPNOTSUPP || e == ENETUNREACH;
}

int http_serve_one(int listen_fd, int timeout_ms, http_respond_fn respond, void *ctx)
{
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	char buf[HTTP_HEAD_MAX];
	struct http_request req;
	size_t got = 0;
	int fd, r, status, err = 0;
	bool more = false;         /* more than the head came or may come */

	fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return accept_retry(errno) ? -EAGAIN : -errno;
	r = read_head(fd, deadline, buf, &got);
	if (r == -ENOSPC || r == -EPROTO)
		status = r == -ENOSPC ? 431 : 400;
	else if (r < 0)
		goto out;
	else
		status = parse_head(buf, (size_t) r, &req, &more);
	if (status == 0 && strcmp(req.method, "GET") && strcmp(req.method, "HEAD"))
		status = 405;
	more = more || status == 400 || status == 431 || (size_t) r != got;
	r = status ? send_error(fd, deadline, status)
		   : respond_to(fd, deadline, &req, respond, ctx, &err);
	if (r == 0) {
		(void) shutdown(fd, SHUT_WR);
		if (more)      /* then the client's end is waited for */
			linger(fd, deadline);
		r = err;
	}
out:
	(void) close(fd);
	return r;
}
