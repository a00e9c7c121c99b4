/*
 * hwspy record: sample a Python process (attach with -p, or launch a command) and write a
 * profile. The sample callback turns each sample into a stack of the profile model: the
 * Python frames of the sampled thread, read while it is stopped (exact mode) or right after
 * the sample is drained (--nonblocking).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/buf.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/diagnose.h"
#include "cli/format.h"
#include "cli/record.h"
#include "output/profile.h"
#include "pyframes/pyframes.h"
#include "sampler/sampler.h"
#include "symbolizer/symbolizer.h"

/* quit_flag counts SIGINT/SIGTERM/SIGHUP (the second one kills a launched command at once);
 * tty_int_flag: a SIGINT came from the terminal, so the foreground command got it too */
static volatile sig_atomic_t stop_flag, quit_flag, tstp_flag, tty_int_flag;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void) uc;
	if (sig == SIGINT && si && si->si_code == SI_KERNEL)
		tty_int_flag = 1;
	quit_flag = quit_flag + 1;
	stop_flag = 1;
}

/* Ctrl-Z: sampler_run() returns, the target is released, then hwspy stops (pause_for_tstp) */
static void on_tstp(int sig)
{
	(void) sig;
	tstp_flag = 1;
	stop_flag = 1;
}

/* A stopped tracer would freeze every sampled thread of the target: let it go first, stop,
 * and take it again on SIGCONT. */
static int pause_for_tstp(struct sampler *sampler)
{
	tstp_flag = 0;
	stop_flag = 0;
	if (quit_flag)
		stop_flag = 1;
	(void) sampler_pause(sampler);
	(void) raise(SIGSTOP);
	return sampler_resume(sampler);
}

/* The names of the events that open here, for a message. */
static void working_events(struct buf *out)
{
	size_t n;
	const struct event_info *tab = events_table(&n);
	int shown = 0;

	for (size_t i = 0; i < n && shown < 8; i++) {
		struct event_spec spec;
		if (tab[i].kind != EVENT_SOFTWARE || events_parse(tab[i].name, &spec) < 0 ||
		    events_probe(&spec, 0) < 0)
			continue;
		(void) buf_printf(out, "%s%s", shown ? ", " : "", tab[i].name);
		shown++;
	}
}

static int check_events(struct record_opts *o)
{
	for (size_t i = 0; i < o->n_events; i++) {
		int r = events_probe(&o->events[i], 0);
		struct buf b;

		if (r >= 0 || r == -EACCES || r == -EPERM)
			continue;
		buf_init(&b);
		working_events(&b);
		if (r == -ENOENT || r == -EOPNOTSUPP) {
			if ((o->events[i].kind == EVENT_HARDWARE || o->events[i].kind == EVENT_HW_CACHE ||
			     o->events[i].kind == EVENT_RAW) && !events_have_hw_pmu())
				log_error("event '%s' needs a hardware PMU, and this machine exposes none "
					  "(a VM?); events that work here: %s", o->events[i].name, b.data);
			else
				log_error("event '%s' is not supported on this machine; events that work "
					  "here: %s", o->events[i].name, b.data);
		} else {
			log_errno(r, "cannot open event '%s'", o->events[i].name);
		}
		buf_release(&b);
		return r;
	}
	return 0;
}

/* Whether the sampling event can overflow while its thread sleeps in a system call (a switch
 * out, a scheduler tracepoint): a stop there would wake the call early, and epoll_wait, recv
 * with a timeout, sigtimedwait ... would return EINTR in the target. Exact mode by stops is
 * refused for such an event; a clock or fault event overflows only while its thread runs. */
static bool samples_asleep(const struct event_spec *e)
{
	return e->kind == EVENT_TRACEPOINT ||
	       (e->attr.type == PERF_TYPE_SOFTWARE &&
		(e->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
		 e->attr.config == PERF_COUNT_SW_CPU_MIGRATIONS));
}

/* A count event (faults, switches) samples at a fixed period: its own default where no -c was
 * given; -F is refused (the kernel's rate control sizes periods from bursts and stalls on
 * them, and the totals come out wrong). */
static int count_event_period(struct record_opts *o)
{
	uint64_t period = events_default_period(&o->events[0].attr);

	if (!period || !o->freq)
		return 0;
	if (o->freq_given) {
		log_error("'%s' counts occurrences: -F would let the kernel size its periods from "
			  "bursts and stall on them; give a period instead, '-c N' (its default, "
			  "-c %" PRIu64 ", needs neither)", o->events[0].name, period);
		return -EINVAL;
	}
	o->freq = 0;
	o->period = period;
	return 0;
}

static int default_event(struct record_opts *o)
{
	struct event_spec *e = &o->events[0];

	if (events_parse("cycles", e) == 0 && events_probe(e, 0) == 0) {
		o->n_events = 1;
		return 0;
	}
	if (events_parse("cpu-clock", e) < 0)
		return -ENOENT;
	o->n_events = 1;
	if (!o->quiet)
		log_info("no hardware PMU on this machine: sampling 'cpu-clock' (choose with -e)");
	return 0;
}

static void permission_hint(const char *target, pid_t pid, bool kernel)
{
	int paranoid = -1;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");

	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = -1;
		fclose(f);
	}
	if (kernel && geteuid() != 0) {
		log_error("not allowed to record kernel frames (--kernel) of %s: that needs root or "
			  "CAP_PERFMON, or kernel.perf_event_paranoid <= 1 (it is %d)", target, paranoid);
	} else if (geteuid() == 0) {
		char why[320];

		diag_root_denied(pid, why, sizeof(why));
		log_error("not allowed to profile %s: %s", target, why);
	} else {
		log_error("not allowed to profile %s: run hwspy as root or as the target's user with "
			  "CAP_PERFMON and CAP_SYS_PTRACE (kernel.perf_event_paranoid is %d)", target,
			  paranoid);
	}
}

/* Sets exclude_kernel and exclude_hv on every event that counts kernel mode; false if none did. */
static bool user_only(struct record_opts *o)
{
	bool changed = false;

	for (size_t i = 0; i < o->n_events; i++) {
		struct perf_event_attr *a = &o->events[i].attr;
		if (!a->exclude_kernel || !a->exclude_hv)
			changed = true;
		a->exclude_kernel = 1;
		a->exclude_hv = 1;
	}
	return changed;
}

/* 0 if argv0 names an executable (as execvp would find it), else -errno. */
static int find_command(const char *argv0)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(argv0, '/'))
		return access(argv0, X_OK) == 0 ? 0 : -errno;
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		if (len && len + strlen(argv0) + 2 <= sizeof(buf)) {
			snprintf(buf, sizeof(buf), "%.*s/%s", (int) len, path, argv0);
			if (access(buf, X_OK) == 0)
				return 0;
		}
		path += len + (path[len] == ':');
	}
	return -ENOENT;
}

static int python_error(int r, const struct recorder *rec, const char *what)
{
	if (r == -ENOTSUP)
		log_error("%s runs unsupported Python %s; hwspy supports 3.8-3.14", what,
			  rec->info.version[0] ? rec->info.version : "(unknown version)");
	else if (r == -ENOENT)
		log_error("%s is not a Python process (no libpython or _PyRuntime found); "
			  "add --native to profile its native code alone", what);
	else if (r == -EBADMSG)
		log_error("cannot read the Python frames of %s: %s", what, rec->info.error);
	else
		log_errno(r, "cannot read the Python interpreter of %s", what);
	return r;
}

/* Capture mode, once the interpreter is known: the program that copies its frames. */
static void capture_start(struct recorder *rec)
{
	int r = record_capture_start(rec);

	if (r < 0)
		log_errno(r, "cannot start the BPF capture of Python frames; reading each stack "
			  "after its sample instead, as --nonblocking");
}

/* Sampling is over: the launched command ends (record_child_end), or is left running. */
static void end_command(struct recorder *rec, const struct record_opts *o,
			struct record_child *c)
{
	const struct sampler_stats *st;
	struct record_child_opts co = {
		.grace = o->grace, .keep_running = o->keep_running, .tty_sigint = tty_int_flag,
		.quits = &quit_flag,
	};

	sampler_stop(rec->sampler);
	st = sampler_stats(rec->sampler);
	if (st->target_exited && !c->ended) {
		c->ended = true;        /* the sampler reaped it */
		c->status = st->exit_status;
	}
	record_child_end(c, &co);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct recorder rec = { .opts = &o, .stop = &stop_flag };
	struct sampler_opts so = { 0 };
	struct sampler_capture_spec cspec;
	char target[320], defpath[64];
	const char *names[SAMPLER_MAX_EVENTS];
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
	struct record_child child = { 0 };
	uint64_t start, duration_ns;
	bool tty = isatty(STDERR_FILENO);
	struct outfile out = { 0 };
	int r, status = 1;

	/* every option is checked before anything is opened, attached or written */
	r = record_parse_args(argc, argv, &o);
	if (r)
		return r > 0 ? 0 : 2;
	if (!o.n_events && default_event(&o) < 0)
		return 1;
	if (check_events(&o) < 0)
		return 1;
	if (count_event_period(&o) < 0)
		return 2;
	if (o.ptrace && samples_asleep(&o.events[0])) {
		log_error("'%s' samples threads as they go to sleep: --ptrace would stop them there "
			  "and interrupt their system calls; leave --ptrace out (the BPF capture) or "
			  "use --nonblocking", o.events[0].name);
		return 2;
	}
	for (size_t i = 0; i < o.n_events; i++)
		names[i] = o.events[i].name;
	rec.prof = profile_new(names, o.n_events);
	if (!rec.prof || record_special_frame(&rec, "[native]", &rec.native_frame) < 0 ||
	    record_special_frame(&rec, "[unknown]", &rec.unknown_frame) < 0) {
		log_error("out of memory");
		goto out;
	}
	profile_set_event_rate(rec.prof, 0, o.freq, o.period, true);
	if (format_column(&o.fmt, rec.prof) < 0) {
		status = 2;     /* --weight names no event of -e: a usage error */
		goto out;
	}

	if (o.pid) {
		if (kill(o.pid, 0) < 0 && errno == ESRCH) {
			log_error("no process with pid %d", o.pid);
			goto out;
		}
		if (diag_kernel_thread(o.pid) == 1) {
			log_error("pid %d is a kernel thread, not a Python process", o.pid);
			goto out;
		}
	} else {
		r = find_command(o.argv[0]);
		if (r < 0) {
			log_errno(r, "cannot run '%s'", o.argv[0]);
			goto out;
		}
	}
	if (!o.output) {
		snprintf(defpath, sizeof(defpath), "hwspy-%d.%s", o.pid ? o.pid : (int) getpid(),
			 !o.format_given ? "folded" : o.format == FORMAT_SPEEDSCOPE ? "speedscope.json" :
			 o.format == FORMAT_PPROF ? "pb.gz" : o.format == FORMAT_SVG ? "svg" : "folded");
		o.output = defpath;
	}
	if (!o.format_given)
		o.format = format_of_path(o.output);
	/* speedscope shows samples in time order: keep it, within a budget (see README) */
	if (o.format == FORMAT_SPEEDSCOPE)
		(void) profile_log_start(rec.prof, RECORD_LOG_BYTES);
	/* the output's temporary file, before attaching: a bad -o is found now */
	if (cli_output_open(&out, o.output) < 0)
		goto out;

	if (o.pid) {
		snprintf(target, sizeof(target), "pid %d", o.pid);
		r = remote_mem_open_pid(o.pid, &rec.mem);
		if (r >= 0) {
			rec.mem_open = true;
			r = pyframes_open(o.pid, &rec.mem, &rec.pf, &rec.info);
		}
		if (r == -EPERM || r == -EACCES) {
			permission_hint(target, o.pid, false);
			goto out;
		}
		if (r == -ESRCH) {
			log_error("no process with pid %d", o.pid);
			goto out;
		}
		if (r == -ENOENT && o.native) {
			log_info("%s is not a Python process: recording native frames only", target);
		} else if (r < 0) {
			python_error(r, &rec, target);
			goto out;
		}
		r = symbolizer_new(o.pid, &rec.sym);
		if (r < 0) {
			log_errno(r, "cannot read the mappings of %s", target);
			goto out;
		}
		/* nothing stops the target while the first samples are unwound slowly: load the
		 * modules' symbols and CFI before sampling starts, not while the rings fill */
		if (!o.nonblocking && !o.ptrace) {
			struct native_frame nf;

			if (o.native)
				(void) symbolizer_warm(rec.sym);
			if (o.kernel)   /* loads /proc/kallsyms */
				(void) symbolizer_kernel(rec.sym, 0, &nf);
		}
	} else {
		snprintf(target, sizeof(target), "'%s'", o.argv[0]);
	}

	if (!o.nonblocking && !o.ptrace && o.events[0].kind == EVENT_TRACEPOINT) {
		/* the capture is a perf-event program, which the kernel attaches to software and
		 * hardware events only; a stop where a thread goes to sleep would interrupt its call */
		log_info("'%s' is a tracepoint: no BPF capture attaches to it, and a stop would "
			 "interrupt the system call it samples; reading each stack after its sample, "
			 "as --nonblocking", o.events[0].name);
		o.nonblocking = true;
	}
	if (!o.nonblocking && !o.ptrace) {
		/* exact without stopping anything where BPF is allowed */
		r = sampler_capture_probe();
		rec.capture = r == 0;
		if (r < 0) {
			char why[320];

			diag_bpf_refused(r, why, sizeof(why));
			if (samples_asleep(&o.events[0])) {
				log_info("no BPF capture here (%s), and stopping a thread as it goes "
					 "to sleep would interrupt its system call: reading each stack "
					 "after its sample instead, as --nonblocking", why);
				o.nonblocking = true;
			} else {
				log_info("no BPF capture here (%s): exact mode stops each sampled "
					 "thread instead", why);
			}
		}
	}
	if (rec.pf)
		record_python_found(&rec);
	rec.scratch = malloc(MAX_NATIVE * MERGE_SCRATCH_PER_FRAME);
	if (!rec.scratch || record_pending_init(&rec, o.native ? o.stack_size : 0) < 0) {
		log_error("out of memory");
		goto out;
	}

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa = (struct sigaction) { .sa_handler = on_tstp };
	sigaction(SIGTSTP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	so = (struct sampler_opts) {
		.pid = o.pid, .argv = o.argv, .events = o.events, .n_events = o.n_events,
		.freq = o.freq, .period = o.period, .exact = !o.nonblocking && !rec.capture,
		.stop_budget_pct = o.stop_budget,
		.capture = rec.capture,
		.stack_user_size = o.native ? o.stack_size : 0, .kernel_callchain = o.kernel,
		.regs_user_mask = SYMBOLIZER_X86_64_REGS,
		.event_fn = record_on_event, .event_ctx = &rec,
		.ring_pages = o.native ? (rec.capture ? 512 : 256) : rec.capture ? 256 : 0,
	};
	/* attach: the interpreter is known, so every sample can be captured from the first */
	if (rec.capture && rec.pf && record_capture_spec(&rec, &cspec) == 0)
		so.capture_spec = &cspec;
	r = sampler_new(&so, &rec.sampler);
	if (r >= 0 && so.capture_spec) {
		rec.capture_gen = rec.pf_gen;
		rec.capture_error = sampler_capture_error(rec.sampler);
		if (rec.capture_error && rec.capture_error != -EPERM && cspec.n_extras) {
			/* a kernel that refuses the larger program: the frames alone */
			cspec.n_extras = 0;
			rec.capture_error = sampler_capture_start(rec.sampler, &cspec);
		}
		rec.capture_extras = rec.capture_error ? 0 : cspec.n_extras;
		if (rec.capture_error)
			log_errno(rec.capture_error, "cannot start the BPF capture of Python frames; "
				  "reading each stack after its sample instead, as --nonblocking");
	}
	if ((r == -EPERM || r == -EBUSY) && so.exact) {
		if (r == -EBUSY)
			log_info("cannot stop the target's threads harmlessly (it catches SIGURG and "
				 "SIGWINCH and ignores no signal); falling back to --nonblocking");
		else
			log_info("cannot stop the target's threads (ptrace refused: another tracer, "
				 "Yama ptrace_scope or no CAP_SYS_PTRACE); falling back to --nonblocking");
		o.nonblocking = true;
		so.exact = false;
		if (rec.pf)
			pyframes_set_verify(rec.pf, true);
		r = sampler_new(&so, &rec.sampler);
	}
	if (r == -EACCES && !o.kernel && user_only(&o)) {
		/* as perf does: where kernel-mode counting is refused, count user space only */
		log_info("not allowed to count in kernel mode (kernel.perf_event_paranoid); counting "
			 "user space only, as ':u'");
		r = sampler_new(&so, &rec.sampler);
	}
	if (r < 0) {
		if (r == -ESRCH)
			log_error("no process with pid %d (it exited)", o.pid);
		else if (r == -EACCES || r == -EPERM)
			permission_hint(target, o.pid, o.kernel);
		else if (r == -ENOENT)
			log_error("event '%s' cannot be opened on this machine", o.events[0].name);
		else
			record_limit_error(r, target);
		goto out;
	}
	sampler_set_resumed_fn(rec.sampler, record_flush);
	if (o.argv) {
		snprintf(target, sizeof(target), "'%s' (pid %d)", o.argv[0], sampler_pid(rec.sampler));
		child = (struct record_child) { .pid = sampler_pid(rec.sampler), .name = o.argv[0] };
	}
	(void) profile_set_target(rec.prof, target);
	profile_meta(rec.prof)->start_time_ns = (uint64_t) time(NULL) * 1000000000ULL;
	/* exact mode by stops reads late too: samples past a thread's stop budget */
	rec.late_us = malloc(LATE_MAX * sizeof(*rec.late_us));
	capture_start(&rec);

	start = clock_now_ns();
	duration_ns = (uint64_t) (o.duration * 1e9);
	while (!stop_flag && !sampler_stats(rec.sampler)->target_exited) {
		uint64_t slice = 250000000ULL, elapsed = clock_now_ns() - start;

		/* a launched command's interpreter: look for it often, not only when samples come
		 * in (every 100 ms in capture mode), so that the capture starts with its first
		 * Python frames */
		if (rec.capture && !rec.pf && !rec.fatal) {
			record_detect(&rec);
			capture_start(&rec);
			slice = DETECT_INTERVAL_NS;
		}
		if (duration_ns) {
			if (elapsed >= duration_ns)
				break;
			if (duration_ns - elapsed < slice)
				slice = duration_ns - elapsed;
		}
		r = sampler_run(rec.sampler, record_on_sample, &rec, &stop_flag, slice);
		if (r >= 0 && tstp_flag && !rec.fatal)
			r = pause_for_tstp(rec.sampler);
		if (r == -EBUSY) {
			log_error("%s began to catch every signal hwspy could stop it with: sampling "
				  "ended early (--nonblocking never stops it)", target);
			break;
		}
		if (r < 0) {
			log_errno(r, "sampling stopped early");
			break;
		}
		capture_start(&rec);            /* the interpreter of a launched command, found */
		if (tty && !o.quiet)
			record_progress(&rec, (double) (clock_now_ns() - start) / 1e9, o.duration, false);
	}
	if (tty && !o.quiet)
		record_progress(&rec, 0, 0, true);
	/* stopping drains what is left in the rings through the callback */
	sampler_stop(rec.sampler);
	/* nothing is traced any more: Ctrl-Z may stop hwspy as it does any program */
	signal(SIGTSTP, SIG_DFL);
	if (tstp_flag)
		(void) raise(SIGTSTP);
	record_flush(&rec);
	record_build_ids(&rec);
	{
		const struct sampler_stats *st = sampler_stats(rec.sampler);
		double elapsed = (double) (clock_now_ns() - start) / 1e9;
		struct profile_meta *meta = profile_meta(rec.prof);

		meta->duration_ns = clock_now_ns() - start;
		meta->lost = st->lost;
		meta->dropped = rec.dropped_torn + rec.dropped_unreadable;
		meta->threads = st->threads_seen;
		if (st->threads_failed) {
			struct buf why;

			buf_init(&why);
			(void) record_threads_missed(st, &why);
			(void) profile_set_threads_missed(rec.prof, st->threads_failed,
							  why.len ? why.data : NULL);
			buf_release(&why);
		}
		if (rec.fatal) {
			python_error(rec.fatal, &rec, target);
			goto out;
		}
		if (o.argv && !rec.pf && !o.native) {
			/* gone before an interpreter was ever found: it was not a Python process */
			python_error(rec.detect_error && rec.detect_error != -ESRCH ? rec.detect_error
										   : -ENOENT,
				     &rec, target);
			goto out;
		}
		if (!st->samples) {
			/* an empty profile is nothing useful: the previous output stays */
			record_no_samples(&rec, target, elapsed);
			goto out;
		}
		struct buf cmdline;

		record_thread_names_final(&rec);
		/* the command line, for the formats that keep it (pprof's comments) */
		buf_init(&cmdline);
		(void) buf_puts(&cmdline, "hwspy");
		for (int i = 0; i < argc; i++)
			(void) buf_printf(&cmdline, " %s", argv[i]);
		o.fmt.command_line = cmdline.len ? cmdline.data : NULL;
		r = format_write(o.format, rec.prof, &o.fmt, out.f);
		buf_release(&cmdline);
		if (r < 0) {
			log_errno(r, "cannot write '%s'", o.output);
			goto out;
		}
		if (cli_output_commit(&out) < 0)
			goto out;
		if (st->target_exited && o.pid)
			log_info("pid %d exited; writing what was sampled", o.pid);
		/* the profile is safe: now the command (its end goes in the summary) */
		if (o.argv)
			end_command(&rec, &o, &child);
		record_summary(&rec, target, elapsed, out.is_stdout ? "to standard output" : o.output);
		if (o.argv)
			record_child_say(&child);
	}
	status = o.argv ? record_child_exit_code(&child) : 0;
out:
	outfile_abort(&out);    /* a no-op once committed */
	if (rec.sampler && o.argv && !child.ended && !child.kept) {
		/* hwspy failed: the command ends too (its status is not hwspy's: that stays 1) */
		end_command(&rec, &o, &child);
		record_child_say(&child);
	}
	sampler_free(rec.sampler);
	pyframes_free(rec.pf);
	if (rec.mem_open)
		remote_mem_close(&rec.mem);
	symbolizer_free(rec.sym);
	record_pending_free(&rec);
	free(rec.scratch);
	profile_free(rec.prof);
	free(rec.names);
	free(rec.pynames);
	free(rec.late_us);
	free(rec.bid_ambiguous);
	return status;
}
