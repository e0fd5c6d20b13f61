/*
 * prof.h - process-wide state of the profiler (prof.c).
 */
#ifndef LT_PROF_H
#define LT_PROF_H

#include "pmu.h"
#include "thread.h"

extern int lt_recording;    /* this process writes a raw file */
extern int lt_pmu_counting; /* per-critical-section miss counting is on */
extern struct lt_pmu_probe lt_pmu_event;

/* Initialise the process once.  Returns 1 when initialisation is complete (here or in
 * another thread, which it waits for), 0 when the calling thread is the one initialising
 * (a lock call from inside the initialisation: pass it through). */
int lt_global_init(void);
int lt_global_done(void);

/* Arrange for lt_thread_retire() to run when the calling thread exits. */
void lt_thread_key_set(struct lt_tls *t);

#endif
