/*
 * test_measures - the benchmark's measures against inputs whose answers are known: Gini, relative
 * standard deviation, min/max ratio and fairness factor; the lock working set size (the
 * Malthusian paper's worked example); the sampled admission order under buffer pressure against
 * a brute-force count; weighted quantiles over reservoirs; the critical section's line chain and
 * its lost-update check.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "cs.h"
#include "order.h"
#include "stats.h"

#define NEAR(a, b) CHECK(fabs((double)(a) - (double)(b)) < 1e-9)

static double gini_brute(const uint64_t *x, size_t n)
{
    double sum = 0, mean = 0;
    for (size_t i = 0; i < n; i++) {
        mean += (double)x[i];
        for (size_t j = 0; j < n; j++)
            sum += fabs((double)x[i] - (double)x[j]);
    }
    mean /= (double)n;
    return mean == 0 ? 0 : sum / (2.0 * (double)n * (double)n * mean);
}

static void test_fairness(void)
{
    const uint64_t equal[4] = {7, 7, 7, 7};
    const uint64_t one[4] = {0, 0, 0, 1};
    const uint64_t ramp[4] = {4, 1, 3, 2};
    const uint64_t classic[8] = {2, 4, 4, 4, 5, 5, 7, 9}; /* mean 5, population sigma 2 */
    const uint64_t three[3] = {1, 2, 3};

    NEAR(lb_gini(equal, 4), 0);
    NEAR(lb_gini(one, 4), 0.75); /* (n-1)/n: one thread did everything */
    NEAR(lb_gini(ramp, 4), 0.25);
    NEAR(lb_gini(classic, 8), gini_brute(classic, 8));
    uint64_t rnd[37];
    uint64_t seed = 42;
    for (int i = 0; i < 37; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        rnd[i] = seed >> 44;
    }
    NEAR(lb_gini(rnd, 37), gini_brute(rnd, 37));

    NEAR(lb_rsd(equal, 4), 0);
    NEAR(lb_rsd(classic, 8), 0.4);
    NEAR(lb_rsd(one, 4), sqrt(3.0)); /* sigma = sqrt(3)/4, mean = 1/4 */

    NEAR(lb_min_max_ratio(classic, 8), 2.0 / 9.0);
    NEAR(lb_min_max_ratio(one, 4), 0);

    NEAR(lb_fairness_factor(equal, 4), 0.5);
    NEAR(lb_fairness_factor(one, 4), 1.0);
    NEAR(lb_fairness_factor(three, 3), 4.0 / 6.0); /* 3 + half of 2, over 6 */
}

/* Admission history A B C A B C D A E (threads 0..4) at ranks 0..8. */
static const unsigned history[9] = {0, 1, 2, 0, 1, 2, 3, 0, 4};

static struct lb_lwss lwss_of_history(uint64_t window)
{
    struct lb_order o;
    struct lb_order_rec rec[5];
    lb_order_init(&o, window);
    for (int t = 0; t < 5; t++)
        CHECK(lb_order_rec_init(&rec[t], &o, 0) == 0);
    for (uint64_t s = 0; s < 9; s++)
        lb_order_note(&rec[history[s]], s);
    struct lb_lwss out;
    CHECK(lb_order_analyse(&o, rec, 5, 0, 9, &out) == 0);
    for (int t = 0; t < 5; t++)
        lb_order_rec_destroy(&rec[t]);
    return out;
}

static void test_lwss_worked_example(void)
{
    /* The paper's example: LWS over ranks 0..5 is {A, B, C}, so LWSS = 3. */
    struct lb_lwss w6 = lwss_of_history(6);
    CHECK_EQ(w6.windows, 1); /* ranks 6..8 are not a whole window */
    NEAR(w6.mean, 3);
    CHECK_EQ(w6.min, 3);
    CHECK_EQ(w6.max, 3);
    CHECK_EQ(w6.duplicates, 0);

    struct lb_lwss w3 = lwss_of_history(3); /* ABC ABC DAE */
    CHECK_EQ(w3.windows, 3);
    NEAR(w3.mean, 3);

    struct lb_lwss w2 = lwss_of_history(2); /* AB CA BC DA (E alone is partial) */
    CHECK_EQ(w2.windows, 4);
    NEAR(w2.mean, 2);
    CHECK_EQ(w2.min, 2);
    CHECK_EQ(w2.max, 2);
}

/* Which thread takes rank s: runs of 37 ranks, each run taken by one thread, thread 0 more
 * often than the others (an unfair, bursty lock), deterministic. */
static unsigned owner_of(uint64_t s, unsigned threads)
{
    uint64_t h = s / 37;
    h = (h ^ (h >> 13)) * 0x9e3779b97f4a7c15u;
    if ((h >> 60) < 9)
        return 0;
    return 1 + (unsigned)((h >> 20) % (threads - 1));
}

static void test_sampled_order_matches_brute_force(void)
{
    const unsigned threads = 6;
    const uint64_t W = 100, N = 3000000, from = 250000, to = N;
    struct lb_order o;
    struct lb_order_rec rec[6];
    lb_order_init(&o, W);
    for (unsigned t = 0; t < threads; t++)
        CHECK(lb_order_rec_init(&rec[t], &o, 1000) == 0); /* tiny: forces thinning */
    for (uint64_t s = 0; s < N; s++)
        lb_order_note(&rec[owner_of(s, threads)], s);
    for (unsigned t = 0; t < threads; t++)
        CHECK(rec[t].n <= rec[t].cap);
    struct lb_lwss got;
    CHECK(lb_order_analyse(&o, rec, threads, from, to, &got) == 0);
    CHECK(got.stride >= 64); /* the buffers filled and were thinned many times */
    CHECK_EQ(got.incomplete, 0);
    CHECK_EQ(got.duplicates, 0);
    CHECK(got.windows >= 10);
    CHECK(got.min < got.max); /* the pattern gives windows of 1 to 3 threads */

    /* Brute force over exactly the windows the final stride samples. */
    uint64_t windows = 0;
    double sum = 0;
    unsigned lo = UINT32_MAX, hi = 0;
    for (uint64_t w = (from + W - 1) / W; (w + 1) * W <= to; w++) {
        if (w % got.stride)
            continue;
        int seen[6] = {0};
        unsigned d = 0;
        for (uint64_t s = w * W; s < (w + 1) * W; s++)
            if (!seen[owner_of(s, threads)]++)
                d++;
        windows++;
        sum += d;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    CHECK_EQ(got.windows, windows);
    NEAR(got.mean, sum / (double)windows);
    CHECK_EQ(got.min, lo);
    CHECK_EQ(got.max, hi);
    for (unsigned t = 0; t < threads; t++)
        lb_order_rec_destroy(&rec[t]);
}

static void test_duplicate_ranks_are_reported(void)
{
    struct lb_order o;
    struct lb_order_rec rec[2];
    lb_order_init(&o, 4);
    CHECK(lb_order_rec_init(&rec[0], &o, 0) == 0);
    CHECK(lb_order_rec_init(&rec[1], &o, 0) == 0);
    for (uint64_t s = 0; s < 8; s++)
        lb_order_note(&rec[s % 2], s);
    lb_order_note(&rec[1], 8); /* both threads got rank 8: two in the section at once */
    lb_order_note(&rec[0], 8);
    for (uint64_t s = 9; s < 12; s++)
        lb_order_note(&rec[0], s);
    struct lb_lwss out;
    CHECK(lb_order_analyse(&o, rec, 2, 0, 12, &out) == 0);
    CHECK_EQ(out.duplicates, 1);
    lb_order_rec_destroy(&rec[0]);
    lb_order_rec_destroy(&rec[1]);
}

static void test_quantiles(void)
{
    struct lb_reservoir r;
    CHECK(lb_reservoir_init(&r, 1000, 1) == 0);
    for (uint32_t v = 100; v >= 1; v--)
        lb_reservoir_add(&r, v);
    struct lb_quantiles q;
    CHECK(lb_quantiles(&r, 1, &q) == 0);
    CHECK_EQ(q.samples, 100);
    NEAR(q.min, 1);
    NEAR(q.p50, 50);
    NEAR(q.p90, 90);
    NEAR(q.p99, 99);
    NEAR(q.max, 100);
    NEAR(q.mean, 50.5);
    lb_reservoir_destroy(&r);

    /* Weights: a reservoir that saw 1000 events of 10 but kept 10 outweighs one that saw 10
     * events of 20; unweighted, the median would sit between them. */
    struct lb_reservoir two[2];
    CHECK(lb_reservoir_init(&two[0], 10, 7) == 0);
    CHECK(lb_reservoir_init(&two[1], 10, 9) == 0);
    for (int i = 0; i < 1000; i++)
        lb_reservoir_add(&two[0], 10);
    for (int i = 0; i < 10; i++)
        lb_reservoir_add(&two[1], 20);
    CHECK(lb_quantiles(two, 2, &q) == 0);
    CHECK_EQ(q.samples, 1010);
    NEAR(q.p50, 10);
    NEAR(q.p99, 10);
    NEAR(q.max, 20);
    NEAR(q.mean, (1000.0 * 10 + 10 * 20) / 1010);
    lb_reservoir_destroy(&two[0]);
    lb_reservoir_destroy(&two[1]);

    /* A full reservoir keeps a uniform sample: of 0..99999, about as many below as above. */
    CHECK(lb_reservoir_init(&r, 2000, 3) == 0);
    for (uint32_t v = 0; v < 100000; v++)
        lb_reservoir_add(&r, v);
    CHECK(lb_quantiles(&r, 1, &q) == 0);
    CHECK(q.p50 > 45000 && q.p50 < 55000);
    lb_reservoir_destroy(&r);
}

static void test_section_chain_and_check(void)
{
    struct lb_shared sh;
    CHECK(lb_shared_init(&sh, 20, 5) == 0);
    /* The chain visits every slot once and comes back to the head. */
    int seen[20] = {0};
    uint32_t slot = sh.head;
    for (int k = 0; k < 20; k++) {
        CHECK(slot < 20);
        CHECK(!seen[slot]++);
        slot = lb_slot(&sh, slot)->next;
    }
    CHECK(slot == sh.head);
    /* Not one slot after the other: the shuffled order defeats a stride prefetcher. */
    int sequential = 1;
    for (uint32_t s = sh.head, k = 0; k < 19; k++, s = lb_slot(&sh, s)->next)
        sequential &= lb_slot(&sh, s)->next == s + 1;
    CHECK(!sequential);

    struct lb_cs_ctx c = {.sh = &sh, .tid = 0, .sample_mask = 3};
    for (int i = 0; i < 1000; i++) {
        lb_cs_run(&c);
        CHECK_EQ(c.seq, i);
    }
    int line;
    uint64_t value;
    CHECK(lb_shared_check(&sh, 1000, &line, &value) == 0);
    CHECK(lb_shared_check(&sh, 1001, &line, &value) != 0);
    CHECK_EQ(line, -1);
    CHECK_EQ(value, 1000);
    /* A lost update on the 8th line of the chain is found there. */
    slot = sh.head;
    for (int k = 0; k < 7; k++)
        slot = lb_slot(&sh, slot)->next;
    lb_slot(&sh, slot)->value--;
    CHECK(lb_shared_check(&sh, 1000, &line, &value) != 0);
    CHECK_EQ(line, 7);
    CHECK_EQ(value, 999);
    lb_shared_destroy(&sh);

    /* K = 0: the section only counts. */
    CHECK(lb_shared_init(&sh, 0, 1) == 0);
    c.sh = &sh;
    for (int i = 0; i < 10; i++)
        lb_cs_run(&c);
    CHECK(lb_shared_check(&sh, 10, &line, &value) == 0);
    lb_shared_destroy(&sh);
}

int main(void)
{
    test_fairness();
    test_lwss_worked_example();
    test_sampled_order_matches_brute_force();
    test_duplicate_ranks_are_reported();
    test_quantiles();
    test_section_chain_and_check();
    return 0;
}
