// mutex_initializer.cocci - a statically initialised lock comes to life where its variable
// is defined: each PTHREAD_*MUTEX_INITIALIZER* becomes the locktune initialiser naming the
// site of the declarator it initialises (every element of an array, every lock field of a
// struct: the same site).
//
//   static pthread_mutex_t g = PTHREAD_MUTEX_INITIALIZER;
//   ->  static pthread_mutex_t g = LT_MUTEX_INITIALIZER(LT_SITE_A_C_12);
//
// Recursive and error-checking initialisers keep their type
// (LT_RECURSIVE_MUTEX_INITIALIZER_NP, LT_ERRORCHECK_MUTEX_INITIALIZER_NP).
// spatch-options: --smpl-spacing

@ initialize:python @
@@
import locktune_sites

// Every declarator with an initialiser, so that an initialiser can find its variable.
@ decl @
identifier x;
position p;
type T;
initializer I;
@@
T x@p = I;

@ script:python @
p << decl.p;
x << decl.x;
T << decl.T;
@@
locktune_sites.remember_declaration(p[0], x, T)

@ init @
identifier I =~ "^PTHREAD_(RECURSIVE_|ERRORCHECK_|ADAPTIVE_)?MUTEX_INITIALIZER(_NP)?$";
position q;
@@
I@q

@ script:python init_site @
q << init.q;
I << init.I;
macro;
site;
@@
m, s = locktune_sites.initializer_site(q[0], I)
coccinelle.macro = cocci.make_ident(m)
coccinelle.site = cocci.make_ident(s)

@@
identifier init.I;
position init.q;
identifier init_site.macro, init_site.site;
@@
- I@q
+ macro(site)
