/*
 * regs: the user registers a sample carries, one definition for the stages that take them (the
 * sampler asks perf for them, PERF_SAMPLE_REGS_USER; a one-shot stop reads them by ptrace) and
 * the one that unwinds with them (the symbolizer).
 *
 * x86-64, perf's perf_regs.h order with the segment registers left out: AX BX CX DX SI DI BP SP
 * IP FLAGS CS SS R8..R15. REGS_USER_MASK is the sample_regs_user mask that selects them; a
 * sample's array holds REGS_USER_N of them, indexed by enum regs_user.
 */
#ifndef HWSPY_BASE_REGS_H
#define HWSPY_BASE_REGS_H

#define REGS_USER_MASK 0xff0fffULL
#define REGS_USER_N 20
_Static_assert(__builtin_popcountll(REGS_USER_MASK) == REGS_USER_N,
	       "REGS_USER_N is the popcount of REGS_USER_MASK");

enum regs_user {
	REGS_AX, REGS_BX, REGS_CX, REGS_DX, REGS_SI, REGS_DI, REGS_BP,
	REGS_SP, REGS_IP, REGS_FLAGS, REGS_CS, REGS_SS,
	REGS_R8, REGS_R9, REGS_R10, REGS_R11, REGS_R12, REGS_R13,
	REGS_R14, REGS_R15,
};

#endif
