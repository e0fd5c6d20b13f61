/*
 * prof.h - process-wide state of the profiler (prof.c).
 */
#ifndef LTP_PROF_H
#define LTP_PROF_H

#include "pmu.h"
#include "thread.h"

extern int ltp_recording;    /* this process writes a raw file */
extern int ltp_pmu_counting; /* per-critical-section miss counting is on */
extern struct ltp_pmu_probe ltp_pmu_event;

/* Initialise the process once.  Returns 1 when initialisation is complete (here or in
 * another thread, which it waits for), 0 when the calling thread is the one initialising
 * (a lock call from inside the initialisation: pass it through). */
int ltp_global_init(void);
int ltp_global_done(void);

/* Arrange for ltp_thread_retire() to run when the calling thread exits. */
void ltp_thread_key_set(struct ltp_tls *t);

/* Measure ltp_sample_bias and ltp_sample_bias_hold (track.h, ltp_unbiased) on the calling
 * thread, t, with no lock held (interpose.c). */
void ltp_sample_calibrate(struct ltp_tls *t);

#endif
