/*
 * tripwire.h - did this thread leave its CPU since it last looked?  A restartable-sequences
 * descriptor used as a tripwire.
 *
 * glibc (2.35 and later) registers every thread's `struct rseq` with the kernel.  Whenever the
 * kernel switches a registered thread out (preemption or sleep), migrates it, or delivers it a
 * signal, it looks at the thread's rseq_cs pointer on the way back to user space: when the
 * pointer is set and the thread's instruction pointer lies outside the critical section it
 * describes, the kernel clears it (Linux, kernel/rseq.c, rseq_ip_fixup).  Our descriptor
 * describes an empty section, so the instruction pointer is never inside it:
 *
 *   armed (rseq_cs = &descriptor) --switch out / migration / signal--> cleared (rseq_cs = 0)
 *     ^                                                                   |
 *     +----------------- ltp_tripped(): counted in t->switches, re-armed --+
 *
 * A timer tick that does not switch the thread leaves it armed.  The cost is a load and a
 * compare per check, a store when it tripped.  A section whose thread's count moved between
 * its lock call's entry and its release lost its CPU inside it: a preemption there is time
 * the lock was held (the truth counts it), but it must not stand for the untimed sections as
 * a random sample does, multiplied by the sampling period (track.h, ltp_released and the
 * untimed release in interpose.c).
 *
 * The kernel checks the descriptor each time it reads it (version 0, the abort address
 * outside the section and preceded by the signature the thread registered, glibc's RSEQ_SIG)
 * and kills the thread with SIGSEGV when it is wrong, so tripwire.c sets it up once per
 * process and tests it (arm, sleep, see it cleared) before any thread uses it.  Where glibc
 * registered no rseq (GLIBC_TUNABLES=glibc.pthread.rseq=0, an older glibc) or the test
 * fails, t->tripwire stays NULL and nothing is ever seen as tripped: the profiler times
 * sections as it did without it, and meta.timing says so.
 */
#ifndef LTP_TRIPWIRE_H
#define LTP_TRIPWIRE_H

#include <stdint.h>

/* Process-wide set-up and self-test; 0 when the tripwire works (why: a reason otherwise). */
int ltp_tripwire_setup(const char **why);

/* The calling thread's rseq_cs word, armed; NULL where there is no working tripwire. */
uint64_t *ltp_tripwire_thread(void);

extern uint64_t ltp_tripwire_armed; /* the value of an armed word: the descriptor's address */

/* 1 when the word was cleared since it was last armed (re-arms it); 0 otherwise. */
static inline int ltp_tripwire_check(uint64_t *w)
{
    /* relaxed: the kernel writes the word only while this thread is off its CPU, and this
     * thread reads it in program order. */
    if (__builtin_expect(!w || __atomic_load_n(w, __ATOMIC_RELAXED) == ltp_tripwire_armed, 1))
        return 0;
    __atomic_store_n(w, ltp_tripwire_armed, __ATOMIC_RELAXED);
    return 1;
}

#endif
