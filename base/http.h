/*
 * http: the least of an HTTP/1.1 server that a metrics endpoint needs, single-threaded, for a
 * poll() loop that does other work too (`hwspy monitor --listen`).
 *
 * http_listen() opens a listening TCP socket; the caller polls it for POLLIN and calls
 * http_serve_one(), which accepts one connection, reads its request head, asks the caller's
 * respond() for a GET or HEAD, writes the response with "Connection: close" and closes the
 * connection: one request per connection, no keep-alive, no request bodies. Whatever the
 * client does (stalls, sends too much, vanishes, resets), one call takes at most timeout_ms
 * (read, respond and write together, plus the time respond() itself takes) and never raises
 * SIGPIPE. Nothing here prints.
 */
#ifndef HWSPY_BASE_HTTP_H
#define HWSPY_BASE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/* The longest request head read (request line and headers); longer: 431. */
#define HTTP_HEAD_MAX 8192

/* Opens a listening socket (O_NONBLOCK, O_CLOEXEC, SO_REUSEADDR) on addr, one of
 *   "127.0.0.1:9464"  "0.0.0.0:9464"  an IPv4 address and a port
 *   "[::1]:9464"      "[::]:9464"     an IPv6 address in brackets and a port ("[::]" takes
 *                                     IPv4 too where net.ipv6.bindv6only is 0, the default)
 *   "localhost:9464"                  127.0.0.1 (looked up nowhere)
 *   ":9464"                           127.0.0.1 too: all interfaces only when asked for
 * A port 0 takes a free one (http_bound_port() tells which). Host names are not resolved.
 * 0 and the socket in *ret_fd (the caller closes it), -EINVAL (addr not of these forms), or
 * -errno of socket(), bind() (-EADDRINUSE, -EACCES, -EADDRNOTAVAIL) or listen(). */
int http_listen(const char *addr, int *ret_fd);

/* The port fd is bound to, or -errno. */
int http_bound_port(int fd);
/* Whether fd is bound to a loopback address (127.0.0.0/8, ::1). */
bool http_bound_loopback(int fd);
/* Whether a Host header's value names the loopback: "localhost", an address in 127.0.0.0/8 or
 * "[::1]", with or without ":PORT" (a web page whose name resolves to 127.0.0.1 sends its own
 * name: a server on the loopback that refuses it cannot be read by the page, DNS rebinding). */
bool http_host_is_loopback(const char *host);

struct http_request {
	char method[8];         /* "GET" or "HEAD" when respond() is called */
	char path[256];         /* the request target's path, without its "?query" */
	char accept[512];       /* the Accept header ("" if none; several joined with ", "; cut
	                         * after the last whole media range that fits) */
	char host[256];         /* the Host header ("" if none; cut to fit) */
};

/*
 * Called for a GET or HEAD request: sets *status (200 ... 599), *ctype (the Content-Type;
 * NULL: "text/plain; charset=utf-8"), *body and *len (the body, which must stay valid until
 * http_serve_one() returns; for HEAD too: its length is sent). Returns 0, or -errno: then a
 * 500 goes out and http_serve_one() returns that error.
 */
typedef int (*http_respond_fn)(void *ctx, const struct http_request *req, int *status,
			       const char **ctype, const char **body, size_t *len);

/*
 * Accepts one connection on listen_fd (from http_listen()) and serves its request:
 *   GET, HEAD                  respond(ctx, ...) (HEAD: the headers alone)
 *   any other method           405 with "Allow: GET, HEAD"
 *   a malformed head           400 (no "HTTP/1.x", a bad header line, HTTP/1.1 without Host)
 *   a target over 255 bytes    414
 *   a head over HTTP_HEAD_MAX  431
 * Every response has Content-Type, Content-Length and "Connection: close". After it, the
 * socket is shut down for writing and what the client still sends is read and dropped (for a
 * short while, within the deadline) before it is closed, so that a client whose request was
 * not read to its end gets the response, not a reset.
 *
 * Returns 0 (a response was sent, whatever its status), -EAGAIN (no connection was waiting),
 * -ETIMEDOUT (the client did not send its head, or read the response, within timeout_ms: the
 * connection is closed), -ECONNRESET or -EPIPE (the client went away), respond()'s error, or
 * -errno of accept4() (-EMFILE, -ENFILE: the connection stays queued; back off before calling
 * again) or poll().
 */
int http_serve_one(int listen_fd, int timeout_ms, http_respond_fn respond, void *ctx);

#endif
