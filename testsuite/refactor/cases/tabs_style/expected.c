/* Kernel style: tabs, and error paths through goto. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long used, limit = NTHREADS * ITERS / 2;

/* Critical section of charge() on &lock (input.c:11-18), extracted by locktune-extract. */
union charge__cs1_ctx {
	struct {
		long n;
		int ret;
	} in;
	struct {
		int ret;
	} out;
};

static void *charge__cs1(void *lt_arg)
{
	union charge__cs1_ctx *lt_ctx = lt_arg;
	long n = lt_ctx->in.n;
	int ret = lt_ctx->in.ret;

	if (used + n > limit) {
		ret = -1;
		goto out_unlock;
	}
	used += n;
out_unlock:
	lt_ctx->out.ret = ret;
	return NULL;
}

static int charge(long n)
{
	int ret = 0;

	union charge__cs1_ctx lt_cs1 = {.in = {.n = n, .ret = ret}};
	lt_execute(&lock, charge__cs1, &lt_cs1);
	ret = lt_cs1.out.ret;
	return ret;
}

static void *worker(void *arg)
{
	long fails = 0;

	(void)arg;
	for (int i = 0; i < ITERS; i++)
		fails += charge(1) < 0;
	return (void *)fails;
}

int main(void)
{
	run_threads(worker);
	printf("used %ld\n", used);
	return 0;
}
