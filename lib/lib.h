/*
 * lib.h: what lib/'s files share beyond lib/internal.h: the event list behind struct
 * hwspy_events (events.c), the profile handle
 * (profile.c) and the machine's words (diagnose.c).
 */
#ifndef HWSPY_LIB_LIB_H
#define HWSPY_LIB_LIB_H

#include <stdbool.h>

#include "include/hwspy.h"
#include "output/profile.h"
#include "sampler/events.h"

struct hwspy_events {
	struct event_spec spec[HWSPY_MAX_EVENTS];
	size_t n;
};

/* A profile handle: a recorder's (owned false: freed with it) or the caller's. */
struct hwspy_profile {
	struct profile *p;
	bool owned;
	bool plain[2];  /* a hwspy_profile_diff(): BEFORE, AFTER is a folded file's counts, of no
	                 * known unit (diff_side.plain) */
};

/* (summary) record.c: a recorder's options as given and its events (after a user-space-only
 * fallback, ':u'), for summary.c. */
const struct hwspy_record_opts *lib_recorder_opts(const struct hwspy_recorder *h);
const struct hwspy_events *lib_recorder_events(const struct hwspy_recorder *h);
/* (monitor) the target's GIL state's address, 0 unknown: on the thread running the recorder. */
uint64_t lib_recorder_gil_addr(struct hwspy_recorder *h);

#endif
