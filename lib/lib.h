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
};

#endif
