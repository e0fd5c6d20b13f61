// types.cocci - pthread_mutex_t and pthread_cond_t become the locktune types wherever a
// type is written: declarations of globals, locals, struct fields (headers included),
// arrays, parameters, typedefs, casts and sizeof.

@@
typedef pthread_mutex_t;
typedef lt_mutex_t;
@@
- pthread_mutex_t
+ lt_mutex_t

@@
typedef pthread_cond_t;
typedef lt_cond_t;
@@
- pthread_cond_t
+ lt_cond_t
