// InitWrapper: is a function an init wrapper, one that brings its caller's lock to life?
// Recognised without help (issue 11, "init wrappers give each caller its own site"):
//
//   static inline int mythread_mutex_init(mythread_mutex *mutex)
//   {
//       return pthread_mutex_init(mutex, NULL);
//   }
//
// The body makes exactly one pthread_mutex_init call, and the lock it initialises is an
// expression of exactly one parameter (`mutex`, `&o->lock`, `&p->locks[i]` with i a local or
// a global).  Every lock such a wrapper initialises would otherwise share one site, the
// wrapper's own line, and so one algorithm.  The rewriter gives the wrapper a site parameter
// and each call its caller's site (locktune/rewrite/initwrappers.py); it does so only for a
// static function, whose callers are all in the translation units that include it: an
// external one's signature is its callers' API.
#ifndef LOCKTUNE_EXTRACT_INITWRAPPER_H
#define LOCKTUNE_EXTRACT_INITWRAPPER_H

#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"

#include <optional>

namespace locktune {

struct InitWrapperShape {
    const clang::CallExpr *Init = nullptr; // the pthread_mutex_init call in the body
    unsigned Param = 0;                    // the parameter the initialised lock comes from
};

// The shape of Def (a definition) as an init wrapper, or nothing.
std::optional<InitWrapperShape> initWrapperShape(const clang::FunctionDecl *Def);

// The init wrapper a call calls (its callee's definition has the shape), or nothing.
std::optional<InitWrapperShape> initWrapperCalled(const clang::CallExpr *Call);

} // namespace locktune

#endif
