/*
 * hwspy.h: libhwspy, the engine of hwspy as one library. The commands (cli/), the Python
 * package and the monitor are its clients and include nothing else of it.
 *
 * What it does: events (parse, probe, list); counting (a process, or the calling one: totals
 * per event and per thread, derived metrics); recording (a process, a launched command or the
 * calling one: samples turned into stacks of Python, native and kernel frames, each finished
 * sample handed to a sink, or kept in a profile); the snapshot of every thread's stack (dump);
 * the findings (a diagnosis from counts and a profile, as data); the live table `top` shows;
 * writing and reading every profile format.
 *
 * The contract, for every function below:
 * - Errors: functions returning int return >= 0 on success and -errno on failure. The failure's
 *   reason, in words a user can act on ("event 'cycles' is not supported on this machine (no
 *   hardware PMU)"), is hwspy_reason()'s until the next hwspy call on the same thread. Domain
 *   meanings reuse errno: -ESRCH the target is gone, -EPERM / -EACCES not allowed, -ENOENT no
 *   such event or no interpreter, -ENOTSUP an unsupported Python or event, -EINVAL a bad
 *   argument, -ENOMEM.
 * - The library never prints, never exits, never installs a signal handler, blocks no signal of
 *   the caller's and changes no resource limit, unless an option says so (the command line's
 *   own choices are options of the same functions).
 * - Handles are opaque and the caller's: hwspy_X_new()/hwspy_X_free() (free(NULL) is a no-op),
 *   everything they allocated freed by their _free. Strings and arrays a handle returns stay
 *   valid until the next call on that handle, unless said otherwise.
 * - Threads: a handle is used by one thread at a time; different handles may be used from
 *   different threads. What blocks, and for how long, is said at each function. Callbacks run on
 *   the thread that called the function that runs them, unless said otherwise.
 * - Units: every count as the kernel gave it, scaled for multiplexing where said; times in
 *   nanoseconds.
 */
#ifndef HWSPY_H
#define HWSPY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== common ================================================================================ */

/* The library's version, "0.1.0". */
const char *hwspy_version(void);
/* Why the last failing hwspy call on this thread failed, in one line (no trailing newline);
 * "" when there is nothing to say. */
const char *hwspy_reason(void);

#ifdef __cplusplus
}
#endif

#endif
