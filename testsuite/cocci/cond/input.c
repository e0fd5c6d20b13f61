#include <pthread.h>
#include <time.h>

static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int flag;

int wait_ready(const struct timespec *deadline)
{
    int err = 0;
    pthread_mutex_lock(&lock);
    while (!flag && err == 0)
        err = deadline ? pthread_cond_timedwait(&ready, &lock,
                                                deadline)
                       : pthread_cond_wait(&ready, &lock);
    pthread_mutex_unlock(&lock);
    return err;
}

void set_ready(pthread_cond_t *other)
{
    pthread_mutex_lock(&lock);
    flag = 1;
    pthread_cond_broadcast(&ready);
    pthread_cond_signal(other);
    pthread_mutex_unlock(&lock);
}

int make(pthread_cond_t *c, pthread_condattr_t *a)
{
    int r = pthread_cond_init(c, a);
    return r ? r : pthread_cond_destroy(c);
}
