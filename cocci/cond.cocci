// cond.cocci - condition variables move to the lt_ API, whose waits take an lt_mutex_t of
// any algorithm: same arguments, same POSIX return values.  Only names change.

@@
symbol pthread_cond_init, pthread_cond_wait, pthread_cond_timedwait;
symbol pthread_cond_signal, pthread_cond_broadcast, pthread_cond_destroy;
symbol PTHREAD_COND_INITIALIZER;
@@
(
- pthread_cond_wait
+ lt_cond_wait
|
- pthread_cond_timedwait
+ lt_cond_timedwait
|
- pthread_cond_signal
+ lt_cond_signal
|
- pthread_cond_broadcast
+ lt_cond_broadcast
|
- pthread_cond_init
+ lt_cond_init
|
- pthread_cond_destroy
+ lt_cond_destroy
|
- PTHREAD_COND_INITIALIZER
+ LT_COND_INITIALIZER
)
