/* Lock macros that expand to for statements, used as `WITH_LOCK(m) { ... }`: the body is the
 * critical section.  WITH_LOCK is two nested fors (the outer condition locks on entry and
 * unlocks on the way out, the inner one runs the body once), so a break or a continue in the
 * body leaves the section through the unlock; LOCKED is one for whose step unlocks, so a
 * continue unlocks but a break leaves the lock held.  Extracted: plain, break, continue, a loop
 * of its own inside the body, one nested in another.  Kept: a return inside the body (the
 * lock stays held for the caller) and a break out of LOCKED. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 2000

static inline void grab(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
}

static inline void drop(pthread_mutex_t *m)
{
    pthread_mutex_unlock(m);
}

#define GUARD_NAME(a, b) a##b
#define WITH_LOCK_AT(m, n)                                                                 \
    for (int GUARD_NAME(held_, n) = 0;                                                     \
         GUARD_NAME(held_, n) ? (drop(&(m)), 0) : (grab(&(m)), 1); GUARD_NAME(held_, n) = 1) \
        for (int GUARD_NAME(once_, n) = 1; GUARD_NAME(once_, n); GUARD_NAME(once_, n) = 0)
#define WITH_LOCK(m) WITH_LOCK_AT(m, __LINE__)

#define LOCKED(m)                                                                          \
    for (int locked_once = (pthread_mutex_lock(&(m)), 1); locked_once;                     \
         locked_once = 0, pthread_mutex_unlock(&(m)))

static pthread_mutex_t bank = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static long balance = 100000, attempts, transfers, hist[8], missed, odd_notes, even_notes;
static long reserved, zero_reserves, low;

static void deposit(long n)
{
    WITH_LOCK(bank) {
        balance += n;
    }
}

static int withdraw(long n)
{
    int ok = 0;
    WITH_LOCK(bank) {
        attempts++;
        if (balance < n)
            break; /* leaves the section: the macro still unlocks */
        balance -= n;
        ok = 1;
    }
    return ok;
}

static void tally(int i)
{
    WITH_LOCK(stats_lock) {
        for (int k = 0; k < 3; k++) { /* a loop of the section's own */
            if (k == 1)
                continue;
            hist[(i + k) % 8]++;
            if (k == 2)
                break;
        }
        if (i % 3 == 0)
            continue; /* leaves the section too */
        missed++;
    }
}

static void transfer(long n)
{
    WITH_LOCK(bank) {
        balance += n;
        WITH_LOCK(stats_lock) {
            transfers++;
        }
        balance -= n;
    }
}

static void note(long n)
{
    LOCKED(log_lock) {
        if (n % 2) {
            odd_notes++;
            continue; /* runs the step: unlocks */
        }
        even_notes++;
    }
}

/* Leaves with bank held when the balance is low: the caller unlocks. */
static int low_balance_locked(long limit)
{
    WITH_LOCK(bank) {
        if (balance < limit)
            return 1;
    }
    return 0;
}

static void reserve(long n)
{
    LOCKED(log_lock) {
        if (n == 0)
            break; /* skips the step: log_lock stays held, unlocked below */
        reserved += n;
    }
    if (n == 0) {
        zero_reserves++;
        pthread_mutex_unlock(&log_lock);
    }
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        deposit(i % 7);
        if (!withdraw((i * 13 + id) % 11))
            deposit(1);
        tally(i);
        transfer(id);
        note(i + id);
        reserve(i % 5);
        if (low_balance_locked(100000)) {
            low++;
            drop(&bank);
        }
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long h = 0;
    for (int i = 0; i < 8; i++)
        h = h * 3 + hist[i];
    printf("balance %ld attempts %ld transfers %ld hist %ld missed %ld notes %ld/%ld\n", balance,
           attempts, transfers, h, missed, odd_notes, even_notes);
    printf("reserved %ld zero %ld\n", reserved, zero_reserves);
    return 0;
}
// EXTRACTED: 6
// KEPT: returns at line
// KEPT: the break at line
// CHECK: static void *withdraw__cs1(void *lt_arg)
// CHECK: if (balance < n) {
// CHECK-NEXT: lt_ctx->out.ok = ok;
// CHECK-NEXT: return NULL;
// CHECK-NEXT: }
// CHECK: static int withdraw(long n)
// CHECK: lt_execute(&(bank), withdraw__cs1, &lt_cs1);
// CHECK-NOT: WITH_LOCK(bank)
// CHECK: return ok;
// CHECK: static void *tally__cs1(void *lt_arg)
// CHECK: if (k == 1)
// CHECK-NEXT: continue;
// CHECK: if (k == 2)
// CHECK-NEXT: break;
// CHECK: if (i % 3 == 0)
// CHECK-NEXT: return NULL;
// CHECK: static void *note__cs1(void *lt_arg)
// CHECK: odd_notes++;
// CHECK-NEXT: return NULL;
// CHECK: static int low_balance_locked(long limit)
// CHECK-NEXT: {
// CHECK-NEXT: WITH_LOCK(bank) {
