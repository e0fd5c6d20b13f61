#include <pthread.h>
#include <time.h>

struct table {
    pthread_mutex_t lock;
    int n;
};

static int grow(struct table *t, const struct timespec *deadline)
{
    if (pthread_mutex_timedlock(&t->lock, deadline) != 0)
        return -1;
    t->n++;
    pthread_mutex_unlock(&t->lock);
    return 0;
}

int poke(struct table *t, pthread_mutex_t *locks, int i)
{
    if (pthread_mutex_trylock(&locks[i]) == 0) {
        pthread_mutex_unlock(&locks[i]);
    }
    pthread_mutex_lock(&t->lock); /* comment kept */
    t->n--;
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_destroy(&locks[i]);
    return grow(t, 0);
}

/* a lock function taken as a value */
static int (*lock_fn)(pthread_mutex_t *) = pthread_mutex_lock;
static int (*unlock_fn)(pthread_mutex_t *) = &pthread_mutex_unlock;

void with(pthread_mutex_t *m)
{
    lock_fn(m);
    unlock_fn(m);
}
