/*
 * log: the one-line messages of the command-line front end. Library code (sampler/, pyframes/,
 * output/) never calls these: it returns -errno and counts soft failures in its stats.
 *
 * Every message is one line on stderr, prefixed "hwspy: ", lowercase, no trailing period.
 * log_errno(r, ...) appends ": strerror(-r)" and returns r, so a caller can write
 *     return log_errno(r, "cannot open '%s'", path);
 */
#ifndef HWSPY_BASE_LOG_H
#define HWSPY_BASE_LOG_H

enum log_level { LOG_QUIET = 0, LOG_NORMAL = 1, LOG_VERBOSE = 2 };

extern enum log_level log_level;

void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int log_errno(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
