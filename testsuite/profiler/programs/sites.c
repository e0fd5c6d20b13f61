/* sites - locks born in every way a site can be: each line marked SITE:<name> is where the
 * profiler must place that lock (the test reads the markers, not line numbers).  Each site
 * is acquired a distinct, known number of times (the N in SITE:<name>:N).  Built at -O2. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t s_static = PTHREAD_MUTEX_INITIALIZER; /* SITE:static:3 */
static pthread_mutex_t s_zeroed;                             /* SITE:zeroed:5 */
pthread_mutex_t g_array[8];                                  /* SITE:array:16 */
static struct {
    long count;
    pthread_mutex_t lock;
} s_struct = {0, PTHREAD_MUTEX_INITIALIZER}; /* SITE:member:7 */

struct object {
    pthread_mutex_t m;
    long value;
};

static volatile long sink;

static void use(pthread_mutex_t *m, int times)
{
    for (int i = 0; i < times; i++) {
        pthread_mutex_lock(m);
        sink++;
        pthread_mutex_unlock(m);
    }
}

static inline void my_init(pthread_mutex_t *m)
{
    pthread_mutex_init(m, NULL); /* SITE:inner:30 */
}

__attribute__((noinline)) void app_lock_init(pthread_mutex_t *m)
{
    int r = pthread_mutex_init(m, NULL); /* SITE:ninner:42 */
    if (r != 0)
        abort();
}

__attribute__((noinline)) static struct object *make_object(void)
{
    struct object *o = malloc(sizeof *o);
    if (!o)
        abort();
    pthread_mutex_init(&o->m, NULL); /* SITE:init:11 */
    o->value = 0;
    return o;
}

__attribute__((noinline)) static void use_local(void)
{
    static pthread_mutex_t local = PTHREAD_MUTEX_INITIALIZER; /* SITE:local:29 */
    use(&local, 29);
}

int main(void)
{
    use(&s_static, 3);
    use(&s_zeroed, 5);
    for (int i = 0; i < 8; i++)
        use(&g_array[i], 2);
    use(&s_struct.lock, 7);

    struct object *o = make_object();
    use(&o->m, 11);

    pthread_mutex_t loop[4];
    for (int i = 0; i < 4; i++)
        pthread_mutex_init(&loop[i], NULL); /* SITE:loop:12 */
    for (int i = 0; i < 4; i++)
        use(&loop[i], 3);

    pthread_mutex_t a, b, c, d;
    my_init(&a);       /* SITE:wrapA:13 */
    my_init(&b);       /* SITE:wrapB:17 */
    app_lock_init(&c); /* SITE:nwrapC:19 */
    app_lock_init(&d); /* SITE:nwrapD:23 */
    use(&a, 13);
    use(&b, 17);
    use(&c, 19);
    use(&d, 23);

    use_local();

    pthread_mutex_t *fresh = calloc(1, sizeof *fresh);
    if (!fresh)
        abort();
    for (int i = 0; i < 31; i++) {
        pthread_mutex_lock(fresh); /* SITE:firstuse:31 */
        sink++;
        pthread_mutex_unlock(fresh);
    }
    for (int i = 0; i < 4; i++)
        pthread_mutex_destroy(&loop[i]);
    printf("sites done %ld\n", sink);
    return 0;
}
