#include <pthread.h>

static pthread_mutex_t zeroed;
pthread_mutex_t exported_a, exported_b;
extern pthread_mutex_t declared_elsewhere;
static pthread_mutex_t zeroed_array[4];
static pthread_mutex_t initialised = PTHREAD_MUTEX_INITIALIZER;

int use(void)
{
    static pthread_mutex_t function_static;
    pthread_mutex_t automatic;
    pthread_mutex_init(&automatic, NULL);
    pthread_mutex_lock(&function_static);
    pthread_mutex_unlock(&function_static);
    return pthread_mutex_destroy(&automatic);
}

static pthread_mutex_t initialised_later; /* its site is the lt_mutex_init call below */

void start(void)
{
    lt_mutex_init(&initialised_later, NULL, LT_SITE_INPUT_C_22);
}
