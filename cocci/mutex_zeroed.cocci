// mutex_zeroed.cocci - a lock in zero-initialised static storage (a file-scope or `static`
// pthread_mutex_t without initialiser) comes to life at its definition: give it the
// locktune initialiser naming that site.
//
//   static pthread_mutex_t z;   ->   static pthread_mutex_t z = LT_MUTEX_INITIALIZER(LT_SITE_A_C_3);
//
// Left alone: automatic locals (pthread_mutex_init brings them to life), extern
// declarations, locks this file initialises with pthread_mutex_init (their site is that
// call), and arrays (an initialiser would have to list every element; their locks keep
// site 0 and run the default algorithm, see docs/rewrite.md).

@ initialize:python @
@@
import locktune_sites

@ initialised @
identifier x;
expression A, S;
position p;
@@
(
lt_mutex_init@p(&x, A, S)
|
pthread_mutex_init@p(&x, A)
)

@ script:python @
p << initialised.p;
x << initialised.x;
@@
locktune_sites.remember_initialised(p[0], x)

@ in_function @
identifier f, x;
position p;
@@
f(...) { <...
pthread_mutex_t x@p;
...> }

@ extern_decl @
identifier x;
position p;
@@
extern pthread_mutex_t x@p;

@ static_decl @
identifier x;
position p;
@@
static pthread_mutex_t x@p;

@ file_scope @
identifier x;
position p != {in_function.p, extern_decl.p, static_decl.p};
@@
pthread_mutex_t x@p;

@ zeroed @
identifier x;
position p = {static_decl.p, file_scope.p};
@@
pthread_mutex_t x@p;

@ script:python zeroed_site @
p << zeroed.p;
x << zeroed.x;
site;
@@
if locktune_sites.is_initialised(p[0], x):
    cocci.include_match(False)
else:
    coccinelle.site = cocci.make_ident(locktune_sites.site(p[0], "static", x))

@@
identifier zeroed.x;
position zeroed.p;
identifier zeroed_site.site;
@@
pthread_mutex_t x@p
+ = LT_MUTEX_INITIALIZER(site)
;
