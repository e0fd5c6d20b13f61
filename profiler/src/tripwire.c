/*
 * tripwire.c - the rseq tripwire's set-up and self-test (tripwire.h).
 */
#define _GNU_SOURCE
#include "tripwire.h"

#include <stddef.h>
#include <sys/rseq.h>
#include <time.h>

/* glibc 2.35+; weak, so that the library still loads where they are missing. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

/* An empty critical section: start_ip = abort_ip, post_commit_offset 0.  The kernel reads
 * the 4 bytes before abort_ip and wants the registered signature there; it never jumps to
 * abort_ip, since no instruction pointer lies in an empty section, so data will do. */
static const uint32_t signature[2] = {RSEQ_SIG, 0};
static struct rseq_cs descriptor __attribute__((aligned(32)));

uint64_t ltp_tripwire_armed;
static int working;

static uint64_t *word(void)
{
    struct rseq *r = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
    return (uint64_t *)&r->rseq_cs;
}

int ltp_tripwire_setup(const char **why)
{
    if (&__rseq_size == NULL || &__rseq_offset == NULL) {
        *why = "this glibc registers no restartable sequences";
        return -1;
    }
    if (__rseq_size < 20) {
        *why = "glibc did not register restartable sequences (GLIBC_TUNABLES rseq=0?)";
        return -1;
    }
    struct rseq *r = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
    if ((int32_t)r->cpu_id < 0) {
        *why = "the kernel refused this thread's restartable-sequences registration";
        return -1;
    }
    descriptor.version = 0;
    descriptor.flags = 0;
    descriptor.start_ip = (uint64_t)(uintptr_t)&signature[1];
    descriptor.post_commit_offset = 0;
    descriptor.abort_ip = (uint64_t)(uintptr_t)&signature[1];
    ltp_tripwire_armed = (uint64_t)(uintptr_t)&descriptor;
    /* Self-test: a sleep switches the thread out, which must clear the word. */
    uint64_t *w = word();
    uint64_t before = __atomic_load_n(w, __ATOMIC_RELAXED);
    if (before != 0) {
        *why = "another library uses this thread's restartable sequences";
        return -1;
    }
    __atomic_store_n(w, ltp_tripwire_armed, __ATOMIC_RELAXED);
    struct timespec nap = {0, 1000};
    for (int i = 0; i < 3 && __atomic_load_n(w, __ATOMIC_RELAXED) != 0; i++)
        nanosleep(&nap, NULL);
    if (__atomic_load_n(w, __ATOMIC_RELAXED) != 0) {
        __atomic_store_n(w, 0, __ATOMIC_RELAXED);
        *why = "a sleep did not clear the restartable-sequences word (kernel too old?)";
        return -1;
    }
    working = 1;
    *why = "";
    return 0;
}

uint64_t *ltp_tripwire_thread(void)
{
    if (!working)
        return NULL;
    struct rseq *r = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
    if ((int32_t)r->cpu_id < 0)
        return NULL; /* this thread is not registered */
    uint64_t *w = word();
    __atomic_store_n(w, ltp_tripwire_armed, __ATOMIC_RELAXED);
    return w;
}
