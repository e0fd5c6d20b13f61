/* A section that calls a callback through a pointer, the way a library calls its user's
 * hooks under its own lock (libmicrohttpd's completion callback).  The callback checks that
 * it runs on the thread that registered the request, as that library's own tests do: the
 * code a pointer reaches is not known to the rewriter, so the section must run on its
 * caller's thread under every algorithm, RCL's server included (LT_EXEC_ON_CALLER). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 2000

struct request {
    pthread_t owner;
    long done;
};

struct server {
    pthread_mutex_t lock;
    long completed;
    void (*on_complete)(struct request *);
};

static void check_owner(struct request *r)
{
    if (!pthread_equal(r->owner, pthread_self())) {
        fprintf(stderr, "completion callback on the wrong thread\n");
        abort();
    }
    r->done++;
}

static struct server srv = {PTHREAD_MUTEX_INITIALIZER, 0, check_owner};

static void complete(struct server *s, struct request *r)
{
    pthread_mutex_lock(&s->lock);
    s->completed++;
    s->on_complete(r);
    pthread_mutex_unlock(&s->lock);
}

static void *worker(void *arg)
{
    struct request *r = arg;
    r->owner = pthread_self();
    for (int i = 0; i < ITERS; i++)
        complete(&srv, r);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    struct request req[THREADS] = {0};
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, &req[i]);
    long done = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        done += req[i].done;
    }
    printf("completed %ld callbacks %ld\n", srv.completed, done);
    return 0;
}
// EXTRACTED: 1
// CHECK: static void complete(struct server *s, struct request *r)
// CHECK-NEXT: {
// CHECK-NEXT: struct complete__cs1_ctx lt_cs1 = {.s = s, .r = r};
// CHECK-NEXT: lt_execute_ex(&s->lock, complete__cs1, &lt_cs1, LT_EXEC_ON_CALLER);
// CHECK-NEXT: }
