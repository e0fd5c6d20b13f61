/* condtruth - condition variables and lock owner changes whose counts the program knows
 * (testsuite/profiler/test_condtruth.py).  It prints, per site, what it did:
 *   cond NAME waits= timed= timeouts= signals= signals_unwaited= broadcasts=
 *        broadcasts_unwaited= wait_ns=
 *   lock NAME acquisitions= owner_changes=
 * Owner changes are counted inside the critical sections themselves (after every
 * acquisition, condition-wait returns included): an acquisition by another thread than the
 * previous one.  A signal or broadcast is known to find waiters only where every waiter is
 * known to sit inside pthread_cond_wait: it announced itself under the mutex and the wait
 * released it (the signaller holds it now) and nothing has woken it since; phase A signals
 * before any thread exists.
 *   A  no waiter: signal `ready` 5 times, broadcast it 3 times, signal `go` twice.
 *   B  ping-pong: a consumer waits on `ready` ROUNDS times, each woken by one signal.
 *   C  barrier: WAITERS threads wait on `go` (pthread_cond_init'ed), GO_ROUNDS broadcasts.
 *   D  timed: TIMEOUTS timed waits on `idle` that time out (timedwait and clockwait), then
 *      one that a signal ends.
 *   E  owner changes under contention: HOT_THREADS threads take `hot` HOT_EACH times (every
 *      tenth by a trylock loop), yielding now and then. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

#define ROUNDS      200
#define WAITERS     3
#define GO_ROUNDS   30
#define TIMEOUTS    4
#define HOT_THREADS 4
#define HOT_EACH    20000

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER; /* SITE:qlock */
static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;   /* SITE:hot */
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;   /* SITE:ready */
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;    /* SITE:idle */
static pthread_cond_t go;

struct own {
    int owner;
    long acquisitions, changes;
};
struct cv {
    long waits, timed, timeouts, signals, signals_unwaited, broadcasts, broadcasts_unwaited;
    long long wait_ns;
};
static struct own qlock_own, hot_own;
static struct cv ready_cv, go_cv, idle_cv;

static int next_id = 1;
static __thread int me;

static void hello(void)
{
    me = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
}

/* Right after every acquisition, holding the lock. */
static void took(struct own *o)
{
    o->acquisitions++;
    if (o->owner != me) {
        if (o->owner)
            o->changes++;
        o->owner = me;
    }
}

static void lock(pthread_mutex_t *m, struct own *o)
{
    pthread_mutex_lock(m);
    took(o);
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* A wait on c (qlock held); `deadline_ms` > 0: a timed wait, `clockwait` picks the call. */
static int wait_on(pthread_cond_t *c, struct cv *v, int deadline_ms, int clockwait)
{
    int r;
    long long t0 = now_ns();
    if (deadline_ms > 0) {
        struct timespec ts;
        clock_gettime(clockwait ? CLOCK_MONOTONIC : CLOCK_REALTIME, &ts);
        ts.tv_nsec += (deadline_ms % 1000) * 1000000l;
        ts.tv_sec += deadline_ms / 1000 + ts.tv_nsec / 1000000000l;
        ts.tv_nsec %= 1000000000l;
        r = clockwait ? pthread_cond_clockwait(c, &qlock, CLOCK_MONOTONIC, &ts)
                      : pthread_cond_timedwait(c, &qlock, &ts);
        v->timed++;
        v->timeouts += r == ETIMEDOUT;
    } else {
        r = pthread_cond_wait(c, &qlock);
    }
    v->wait_ns += now_ns() - t0;
    v->waits++;
    took(&qlock_own);
    return r;
}

static void signal_(pthread_cond_t *c, struct cv *v, int waited)
{
    pthread_cond_signal(c);
    v->signals++;
    v->signals_unwaited += !waited;
}

static void broadcast_(pthread_cond_t *c, struct cv *v, int waited)
{
    pthread_cond_broadcast(c);
    v->broadcasts++;
    v->broadcasts_unwaited += !waited;
}

/* ---- B */
static int consumer_waiting, item;

static void *consumer(void *arg)
{
    (void)arg;
    hello();
    lock(&qlock, &qlock_own);
    for (int r = 0; r < ROUNDS; r++) {
        consumer_waiting = 1;
        while (!item)
            wait_on(&ready, &ready_cv, 0, 0);
        item = 0;
        consumer_waiting = 0;
    }
    pthread_mutex_unlock(&qlock);
    return NULL;
}

/* ---- C */
static int gen, arrived;

static void *waiter(void *arg)
{
    (void)arg;
    hello();
    lock(&qlock, &qlock_own);
    for (int r = 0; r < GO_ROUNDS; r++) {
        int mine = gen;
        arrived++;
        while (gen == mine)
            wait_on(&go, &go_cv, 0, 0);
    }
    pthread_mutex_unlock(&qlock);
    return NULL;
}

/* ---- D */
static int sleeper_waiting, wake;

static void *sleeper(void *arg)
{
    (void)arg;
    hello();
    lock(&qlock, &qlock_own);
    for (int i = 0; i < TIMEOUTS; i++)
        wait_on(&idle, &idle_cv, 2, i % 2);
    sleeper_waiting = 1;
    while (!wake)
        wait_on(&idle, &idle_cv, 20000, 0);
    pthread_mutex_unlock(&qlock);
    return NULL;
}

/* ---- E */
static void *hotter(void *arg)
{
    (void)arg;
    hello();
    for (int i = 0; i < HOT_EACH; i++) {
        if (i % 10 == 0) {
            while (pthread_mutex_trylock(&hot) != 0)
                sched_yield();
            took(&hot_own);
        } else {
            lock(&hot, &hot_own);
        }
        pthread_mutex_unlock(&hot);
        if (i % 64 == 0)
            sched_yield(); /* let the others in: owner changes */
    }
    return NULL;
}

static void print_cv(const char *name, const struct cv *v)
{
    printf("cond %s waits=%ld timed=%ld timeouts=%ld signals=%ld signals_unwaited=%ld "
           "broadcasts=%ld broadcasts_unwaited=%ld wait_ns=%lld\n",
           name, v->waits, v->timed, v->timeouts, v->signals, v->signals_unwaited, v->broadcasts,
           v->broadcasts_unwaited, v->wait_ns);
}

int main(void)
{
    me = 1;
    pthread_cond_init(&go, NULL); /* SITE:go */

    /* A */
    for (int i = 0; i < 5; i++)
        signal_(&ready, &ready_cv, 0);
    for (int i = 0; i < 3; i++)
        broadcast_(&ready, &ready_cv, 0);
    for (int i = 0; i < 2; i++)
        signal_(&go, &go_cv, 0);

    /* B */
    pthread_t c;
    pthread_create(&c, NULL, consumer, NULL);
    for (int r = 0; r < ROUNDS;) {
        lock(&qlock, &qlock_own);
        if (consumer_waiting && !item) {
            item = 1;
            signal_(&ready, &ready_cv, 1);
            r++;
        }
        pthread_mutex_unlock(&qlock);
        sched_yield();
    }
    pthread_join(c, NULL);

    /* C */
    pthread_t w[WAITERS];
    for (int i = 0; i < WAITERS; i++)
        pthread_create(&w[i], NULL, waiter, NULL);
    for (int r = 0; r < GO_ROUNDS;) {
        lock(&qlock, &qlock_own);
        if (arrived == WAITERS * (r + 1)) {
            gen++;
            broadcast_(&go, &go_cv, 1);
            r++;
        }
        pthread_mutex_unlock(&qlock);
        sched_yield();
    }
    for (int i = 0; i < WAITERS; i++)
        pthread_join(w[i], NULL);

    /* D */
    pthread_t s;
    pthread_create(&s, NULL, sleeper, NULL);
    for (;;) {
        lock(&qlock, &qlock_own);
        int done = sleeper_waiting;
        if (done) {
            wake = 1;
            signal_(&idle, &idle_cv, 1);
        }
        pthread_mutex_unlock(&qlock);
        if (done)
            break;
        sched_yield();
    }
    pthread_join(s, NULL);

    /* E */
    pthread_t h[HOT_THREADS];
    for (int i = 0; i < HOT_THREADS; i++)
        pthread_create(&h[i], NULL, hotter, NULL);
    for (int i = 0; i < HOT_THREADS; i++)
        pthread_join(h[i], NULL);

    print_cv("ready", &ready_cv);
    print_cv("go", &go_cv);
    print_cv("idle", &idle_cv);
    printf("lock qlock acquisitions=%ld owner_changes=%ld\n", qlock_own.acquisitions,
           qlock_own.changes);
    printf("lock hot acquisitions=%ld owner_changes=%ld\n", hot_own.acquisitions, hot_own.changes);
    pthread_cond_destroy(&go);
    return 0;
}
