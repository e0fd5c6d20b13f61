/* Each thread's journal, found through a pthread key. */
#include <pthread.h>
#include <stdlib.h>

struct journal {
    long entries;
    long sum;
};

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void make_key(void)
{
    pthread_key_create(&key, NULL);
}

void journal_open(void)
{
    pthread_once(&once, make_key);
    pthread_setspecific(key, calloc(1, sizeof(struct journal)));
}

static struct journal *mine(void)
{
    struct journal *j = pthread_getspecific(key);
    if (!j)
        abort(); /* run on a thread that opened no journal */
    return j;
}

void journal_note(long amount)
{
    struct journal *j = mine();
    j->entries++;
    j->sum += amount;
}

long journal_close(void)
{
    struct journal *j = pthread_getspecific(key);
    long n = j->entries;
    free(j);
    return n;
}
