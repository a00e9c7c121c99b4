/*
 * load: reads the profile file a command is given (`hwspy convert IN`, `hwspy diff BEFORE
 * AFTER`), whatever its format, into a profile. Internal to cli/.
 *
 * The format is told by the content, never by the name: a file that starts like pprof
 * (pprof_sniff(): the gzip magic 1f 8b, or an uncompressed perftools.profiles.Profile
 * protobuf) is read by pprof_read(), anything else as folded text by folded_read(). path "-"
 * is standard input: its first bytes are peeked and then read again through the same stream,
 * so a pipe works too (nothing is rewound).
 *
 * What comes back:
 *   folded  one event named "samples", each line's COUNT in column 0 and in event 0 (see
 *           folded_read()), all stacks on thread 0; target = the path.
 *   pprof   what pprof_read() gives: the file's events, threads, build-ids and, for hwspy's
 *           own files, its metadata; target = the path when the file names none.
 * An empty profile (no stacks, or only zero counts; an empty file reads as an empty folded
 * file) is NOT an error here: each command decides what it means.
 *
 * On failure, load_profile() logs ONE line and returns NULL; the caller only exits (status 1).
 * The lines, with NAME the path or "<stdin>":
 *   cannot read 'NAME': REASON (strerror)                     cannot open or read the file
 *   NAME:LINE: REASON; a folded line is 'frame;...;leaf COUNT'  malformed folded line
 *   NAME: not a valid pprof profile: REASON                   malformed pprof ("truncated
 *                                                             gzip stream", ...)
 *   out of memory reading 'NAME'
 */
#ifndef HWSPY_CLI_LOAD_H
#define HWSPY_CLI_LOAD_H

#include "output/profile.h"

/* The profile in the file at path ("-": standard input), owned by the caller
 * (profile_free()), or NULL after one line was logged. */
struct profile *load_profile(const char *path);

#endif
