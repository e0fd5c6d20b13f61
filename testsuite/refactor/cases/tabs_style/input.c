/* Kernel style: tabs, and error paths through goto. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long used, limit = NTHREADS * ITERS / 2;

static int charge(long n)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (used + n > limit) {
		ret = -1;
		goto out_unlock;
	}
	used += n;
out_unlock:
	pthread_mutex_unlock(&lock);
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
