/* stripped - lock sites of a program profiled without its debug information (stripped, or
 * with its debug information in a separate build-id file).
 *
 * Four locks initialised in one function (SITE markers, each taken a different number of
 * times: site N is taken N x 100 times), a statically initialised one (50 times), and a function
 * pointer to malloc: built -no-pie, the executable's dynamic symbol table then gives the undefined
 * import `malloc` a nonzero value (its PLT entry), just below the program's code, so a resolver
 * that takes undefined symbols names every frame `malloc+0x...`.
 *
 * Usage: stripped   (prints "ok N")
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t *locks[4];
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER; /* SITE:counter:50 */
void *(*volatile allocate)(size_t);
volatile int ready;

__attribute__((noinline)) void setup(void)
{
    for (int i = 0; i < 4; i++)
        locks[i] = allocate(sizeof(pthread_mutex_t));
    pthread_mutex_init(locks[0], NULL); /* SITE:first:100 */
    pthread_mutex_init(locks[1], NULL); /* SITE:second:200 */
    pthread_mutex_init(locks[2], NULL); /* SITE:third:300 */
    pthread_mutex_init(locks[3], NULL); /* SITE:fourth:400 */
    ready = 1; /* not a tail call: the stripped program has no symbols to follow one */
}

int main(void)
{
    allocate = malloc; /* the address of an import, taken in the code */
    setup();
    long n = 0;
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < (i + 1) * 100; k++) {
            pthread_mutex_lock(locks[i]);
            n++;
            pthread_mutex_unlock(locks[i]);
        }
    for (int k = 0; k < 50; k++) {
        pthread_mutex_lock(&counter_lock);
        n++;
        pthread_mutex_unlock(&counter_lock);
    }
    printf("ok %ld\n", n);
    return 0;
}
