/* Locals declared together (`Edge *enew, *e_am;`) and used only inside a critical section:
 * their declarations move into the extracted function.  Also a declaration whose
 * declarators go to two different sections while one of them stays. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 2000

typedef struct Edge {
    int from, to;
    struct Edge *next;
} Edge;

static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static Edge *edges;
static long nedges, weight, checks;

static void add_edge(int from, int to)
{
    Edge *enew, *e_am;
    pthread_mutex_lock(&graph_lock);
    enew = malloc(sizeof *enew);
    enew->from = from;
    enew->to = to;
    enew->next = NULL;
    for (e_am = edges; e_am && e_am->next; e_am = e_am->next)
        if (e_am->from == from)
            break;
    if (e_am) {
        enew->next = e_am->next;
        e_am->next = enew;
    } else {
        edges = enew;
    }
    nedges++;
    pthread_mutex_unlock(&graph_lock);
}

static long account(int v)
{
    int a, kept = v, c;
    pthread_mutex_lock(&stats_lock);
    a = v * 2;
    weight += a;
    pthread_mutex_unlock(&stats_lock);
    pthread_mutex_lock(&stats_lock);
    c = v % 3;
    checks += c;
    pthread_mutex_unlock(&stats_lock);
    return kept;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    long sum = 0;
    for (int i = 0; i < ITERS; i++) {
        add_edge((int)(i % 7), (int)id);
        sum += account(i + (int)id);
    }
    return (void *)sum;
}

int main(void)
{
    pthread_t t[THREADS];
    long total = 0;
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    long seen = 0, to_sum = 0;
    for (Edge *e = edges; e; e = e->next) {
        seen++;
        to_sum += e->to;
    }
    printf("edges %ld seen %ld to %ld weight %ld checks %ld total %ld\n", nedges, seen, to_sum,
           weight, checks, total);
    while (edges) {
        Edge *n = edges->next;
        free(edges);
        edges = n;
    }
    return 0;
}
// EXTRACTED: 3
// CHECK: static void *add_edge__cs1(void *lt_arg)
// CHECK: Edge *enew;
// CHECK: Edge *e_am;
// CHECK: static void add_edge(int from, int to)
// CHECK-NOT: Edge *
// CHECK: lt_execute(&graph_lock, add_edge__cs1, &lt_cs1);
// CHECK: static long account(int v)
// CHECK-NEXT: {
// CHECK-NEXT: int kept = v;
