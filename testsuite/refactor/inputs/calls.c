#include <pthread.h>

static pthread_mutex_t global = PTHREAD_MUTEX_INITIALIZER;
struct queue {
    pthread_mutex_t mtx;
    int n;
};

int take(struct queue *q)
{
    int r;
    pthread_mutex_lock(&global);
    r = q->n;
    if (r == 0) {
        pthread_mutex_unlock(&global);
        return -1;
    }
    pthread_mutex_unlock(&global);
    if (pthread_mutex_trylock(&q->mtx) == 0) {
        q->n--;
        pthread_mutex_unlock(&q->mtx);
    }
    return r;
}
