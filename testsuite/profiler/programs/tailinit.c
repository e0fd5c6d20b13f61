/* tailinit - locks initialised by a pthread_mutex_init() that is the last statement of its
 * function: gcc -O2 compiles it as a tail call (`jmp pthread_mutex_init@plt`), so the init's
 * return address is in the function's caller.  The site must still be the init call's own
 * line (SITE markers), the line the rewriter names.
 *
 * Usage: tailinit   (prints "ok N")
 */
#include <pthread.h>
#include <stdio.h>

struct account {
    long balance;
    pthread_mutex_t lock;
};

struct queue {
    long head, tail;
    pthread_mutex_t lock;
};

__attribute__((noinline)) void account_init(struct account *a)
{
    a->balance = 0;
    pthread_mutex_init(&a->lock, NULL); /* SITE:account */
}

/* A chain: queue_setup's tail call reaches queue_lock_init, whose tail call is the init. */
__attribute__((noinline)) void queue_lock_init(struct queue *q)
{
    q->tail = 0;
    pthread_mutex_init(&q->lock, NULL); /* SITE:queue */
}

__attribute__((noinline)) void queue_setup(struct queue *q)
{
    q->head = 0;
    queue_lock_init(q);
}

static struct account acct[2];
static struct queue queue;

static void *work(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        struct account *a = &acct[i % 2];
        pthread_mutex_lock(&a->lock);
        a->balance++;
        pthread_mutex_unlock(&a->lock);
        pthread_mutex_lock(&queue.lock);
        queue.head++;
        pthread_mutex_unlock(&queue.lock);
    }
    return NULL;
}

int main(void)
{
    account_init(&acct[0]); /* CALLER:account */
    account_init(&acct[1]);
    queue_setup(&queue); /* CALLER:queue */
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("ok %ld\n", acct[0].balance + acct[1].balance + queue.head);
    return 0;
}
