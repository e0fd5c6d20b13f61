/*
 * tsc.c - TSC rate calibration against CLOCK_MONOTONIC_RAW.
 *
 * Each end of the interval is a (clock, tsc, clock) sandwich; the pair with the narrowest
 * sandwich of five is kept, so a preemption while reading does not skew the rate.
 */
#include "tsc.h"

static double mono_raw(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double lb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One (seconds, tsc) pair, read as tightly together as five tries allow. */
static void sample(double *secs, uint64_t *tsc)
{
    double best = 1e9;
    for (int i = 0; i < 5; i++) {
        double a = mono_raw();
        uint64_t t = lb_tsc_ordered();
        double b = mono_raw();
        if (b - a < best) {
            best = b - a;
            *secs = (a + b) / 2;
            *tsc = t;
        }
    }
}

double lb_tsc_calibrate(double seconds)
{
#if LB_HAVE_TSC
    double s0, s1;
    uint64_t t0, t1;
    sample(&s0, &t0);
    struct timespec nap = {.tv_sec = (time_t)seconds,
                           .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&nap, NULL);
    sample(&s1, &t1);
    return (double)(t1 - t0) / (s1 - s0);
#else
    (void)seconds;
    (void)sample;
    return 1e9;
#endif
}
