// mutex_calls.cocci - the pthread mutex calls that remain after extraction (the lock/unlock
// pairs of sections kept, destroy, calls through function pointers) move to the lt_ API:
// same arguments, same POSIX return values.  Only the name changes, so calls keep their
// layout.

@@
symbol pthread_mutex_lock, pthread_mutex_trylock, pthread_mutex_timedlock;
symbol pthread_mutex_unlock, pthread_mutex_destroy;
@@
(
- pthread_mutex_lock
+ lt_mutex_lock
|
- pthread_mutex_trylock
+ lt_mutex_trylock
|
- pthread_mutex_timedlock
+ lt_mutex_timedlock
|
- pthread_mutex_unlock
+ lt_mutex_unlock
|
- pthread_mutex_destroy
+ lt_mutex_destroy
)
