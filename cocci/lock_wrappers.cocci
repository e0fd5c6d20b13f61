// lock_wrappers.cocci - find the functions whose body is one call, the candidates for lock
// wrappers (memcached's item_lock(hv) { mutex_lock(&item_locks[...]); }), and those whose
// body is empty (stubs such as testapp.c's STATS_LOCK(void) {}).  It changes nothing; each
// one is appended as a JSON line to LOCKTUNE_WRAPPER_LOG.  The rewriter keeps those the
// user named with --lock-wrapper and gives each definition the accessor that lets sections
// in other files be extracted (docs/rewrite.md, "Lock wrappers").

@ initialize:python @
@@
import locktune_sites

@ one_call @
identifier W, F;
type T;
position p;
expression list ES;
@@
T W@p(...) {
(
F(ES);
|
return F(ES);
)
}

@ script:python @
W << one_call.W;
F << one_call.F;
p << one_call.p;
@@
locktune_sites.log_wrapper(p[0], W, F)

@ empty @
identifier W;
type T;
position p;
@@
T W@p(...) { }

@ script:python @
W << empty.W;
p << empty.p;
@@
locktune_sites.log_wrapper(p[0], W, None)

@ static_fn @
identifier one_call.W;
position one_call.p;
position q;
type T;
@@
static T W@p@q(...) { ... }

@ script:python @
W << one_call.W;
q << static_fn.q;
@@
locktune_sites.log_static(q[0], W)
