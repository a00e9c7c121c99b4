/*
 * snapshot.h: a user-stack snapshot of the calling thread in perf's layout (REGS_USER with
 * REGS_USER_MASK + a copy of the stack from SP up), for the symbolizer tests.
 *
 * snapshot_regs() stores the registers as they are in its caller right after it returns (IP =
 * the return address, SP = above it), so the snapshot describes the caller; the caller then
 * copies its stack with snapshot_stack() before returning.
 */
#ifndef HWSPY_TEST_SNAPSHOT_H
#define HWSPY_TEST_SNAPSHOT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SNAP_STACK 16384

struct snapshot {
	uint64_t regs[20];
	unsigned char stack[SNAP_STACK];
	size_t size;
};

void snapshot_regs(uint64_t *regs);

__asm__(
	".text\n"
	".globl snapshot_regs\n"
	".type snapshot_regs, @function\n"
	"snapshot_regs:\n"
	"	movq %rax, 0(%rdi)\n"
	"	movq %rbx, 8(%rdi)\n"
	"	movq %rcx, 16(%rdi)\n"
	"	movq %rdx, 24(%rdi)\n"
	"	movq %rsi, 32(%rdi)\n"
	"	movq %rdi, 40(%rdi)\n"
	"	movq %rbp, 48(%rdi)\n"
	"	leaq 8(%rsp), %rax\n"
	"	movq %rax, 56(%rdi)\n"
	"	movq (%rsp), %rax\n"
	"	movq %rax, 64(%rdi)\n"
	"	pushfq\n"
	"	popq %rax\n"
	"	movq %rax, 72(%rdi)\n"
	"	movq $0x33, 80(%rdi)\n"
	"	movq $0x2b, 88(%rdi)\n"
	"	movq %r8, 96(%rdi)\n"
	"	movq %r9, 104(%rdi)\n"
	"	movq %r10, 112(%rdi)\n"
	"	movq %r11, 120(%rdi)\n"
	"	movq %r12, 128(%rdi)\n"
	"	movq %r13, 136(%rdi)\n"
	"	movq %r14, 144(%rdi)\n"
	"	movq %r15, 152(%rdi)\n"
	"	movq 0(%rdi), %rax\n"
	"	ret\n"
	".size snapshot_regs, .-snapshot_regs\n");

/* Copies [SP, min(SP + SNAP_STACK, top of this thread's stack)) byte by byte, outside ASan's
 * view (live frames have poisoned redzones). */
__attribute__((noinline, no_sanitize_address))
static void snapshot_stack(struct snapshot *s)
{
	pthread_attr_t attr;
	void *addr = NULL;
	size_t size = 0, n = SNAP_STACK;
	uintptr_t sp = (uintptr_t)s->regs[7], top;

	pthread_getattr_np(pthread_self(), &attr);
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	top = (uintptr_t)addr + size;
	if (top > sp && top - sp < n)
		n = top - sp;
	for (size_t i = 0; i < n; i++)
		s->stack[i] = ((volatile const unsigned char *)sp)[i];
	s->size = n;
}

#endif
