#include <pthread.h>
#include <stdlib.h>

struct node {
    pthread_mutex_t lock;
    struct node *next;
};

static pthread_mutex_t table[8];

struct node *node_new(const pthread_mutexattr_t *attr)
{
    struct node *n = calloc(1, sizeof *n);
    if (n == NULL || lt_mutex_init(&n->lock, attr, LT_SITE_INPUT_C_14) != 0) {
        free(n);
        return NULL;
    }
    return n;
}

void table_init(void)
{
    for (int i = 0; i < 8; i++)
        lt_mutex_init(&table[i],
                           NULL, LT_SITE_INPUT_C_24); /* the layout of the call is kept */
}

/* pthread_mutex_init(&in_a_comment, NULL) is not code */
static const char *doc = "pthread_mutex_init(&in_a_string, NULL)";
