// mutex_init.cocci - a lock initialised by pthread_mutex_init comes to life at that call:
// retarget the call to lt_mutex_init with the site's identifier as third argument.
//
//   pthread_mutex_init(&q->lock, &attr)   ->   lt_mutex_init(&q->lock, &attr, LT_SITE_Q_C_41)
//
// Only the function name and the added argument change, so the call keeps its layout and
// every line keeps its number (the next patches map positions to sites by line).

@ initialize:python @
@@
import locktune_sites

@ init @
expression M, A;
position p;
@@
pthread_mutex_init@p(M, A)

@ script:python init_site @
p << init.p;
M << init.M;
site;
@@
coccinelle.site = cocci.make_ident(locktune_sites.site(p[0], "init", locktune_sites.lock_name(M)))

@@
expression init.M, init.A;
position init.p;
identifier init_site.site;
@@
- pthread_mutex_init@p
+ lt_mutex_init
  (M, A
+ , site
  )
