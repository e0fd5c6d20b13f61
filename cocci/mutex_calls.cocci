// mutex_calls.cocci - retarget the pthread mutex calls that remain after extraction to the
// lt_ API (same arguments, same POSIX return values).
@@
expression M;
@@
(
- pthread_mutex_lock(M)
+ lt_mutex_lock(M)
|
- pthread_mutex_trylock(M)
+ lt_mutex_trylock(M)
|
- pthread_mutex_unlock(M)
+ lt_mutex_unlock(M)
|
- pthread_mutex_destroy(M)
+ lt_mutex_destroy(M)
)

@@
expression M, T;
@@
- pthread_mutex_timedlock(M, T)
+ lt_mutex_timedlock(M, T)
