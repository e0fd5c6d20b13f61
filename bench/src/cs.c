/*
 * cs.c - layout and checking of the critical section's shared lines (see cs.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cs.h"

void *lb_cs(void *ctx)
{
    lb_cs_run(ctx);
    return ctx;
}

/* splitmix64: a small, good, seedable generator for the shuffle. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

int lb_shared_init(struct lb_shared *sh, unsigned lines, uint64_t seed)
{
    unsigned n = lines ? lines : 1;
    size_t bytes = (size_t)n * LB_SLOT_BYTES;
    bytes = (bytes + 4095) & ~(size_t)4095;
    sh->region = aligned_alloc(4096, bytes);
    if (sh->region == NULL)
        return -1;
    memset(sh->region, 0, bytes);
    sh->lines = lines;
    sh->nslots = n;

    /* Visiting order: a Fisher-Yates shuffle of the slots. */
    uint32_t *order = malloc(n * sizeof *order);
    if (order == NULL) {
        free(sh->region);
        return -1;
    }
    for (unsigned i = 0; i < n; i++)
        order[i] = i;
    for (unsigned i = n - 1; i > 0; i--) {
        unsigned j = (unsigned)(splitmix64(&seed) % (i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    sh->head = order[0];
    for (unsigned i = 0; i < n; i++)
        lb_slot(sh, order[i])->next = order[(i + 1) % n];
    lb_slot(sh, sh->head)->release_owner = LB_NO_OWNER;
    free(order);
    return 0;
}

void lb_shared_destroy(struct lb_shared *sh)
{
    free(sh->region);
    sh->region = NULL;
}

int lb_shared_check(const struct lb_shared *sh, uint64_t total, int *line, uint64_t *value)
{
    const struct lb_line *h = lb_slot(sh, sh->head);
    if (h->seq != total) {
        *line = -1;
        *value = h->seq;
        return -1;
    }
    const struct lb_line *l = h;
    for (unsigned k = 0; k < sh->lines; k++) {
        if (l->value != total) {
            *line = (int)k;
            *value = l->value;
            return -1;
        }
        l = lb_slot(sh, l->next);
    }
    return 0;
}
