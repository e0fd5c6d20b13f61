// WrapperShape: is a function a lock wrapper, one that takes, releases or tries a lock for
// its caller?  Recognised without help (issue 11, "wrappers without help"):
//
//   void item_lock(uint32_t hv) { mutex_lock(&item_locks[hv & hashmask(item_lock_hashpower)]); }
//   static inline void mythread_mutex_lock(mythread_mutex *mutex)
//   {
//       int ret = pthread_mutex_lock(mutex);
//       assert(ret == 0);
//       (void)ret;
//   }
//   int my_trylock(struct obj *o) { int r = pthread_mutex_trylock(&o->lock); return r; }
//
// The body makes exactly one lock call (pthread_mutex_lock/unlock/trylock or lt_mutex_*),
// evaluated on every path that returns (alone, initialising or assigned to a local, returned,
// or checked by an `if` whose failure branch ends in a noreturn call such as abort()); the
// lock is an expression of the parameters (never written) and of file-scope names, without
// side effects; everything else only reads, writes locals of the wrapper, or ends the program
// (assert, abort): dropping it when a section becomes one lt_execute call changes nothing the
// program does.  A trylock wrapper returns the trylock's result.  Statistics kept around the
// lock (a global counter) make it a near miss, with the reason: the rewriter would drop them.
#ifndef LOCKTUNE_EXTRACT_WRAPPERSHAPE_H
#define LOCKTUNE_EXTRACT_WRAPPERSHAPE_H

#include "LockCalls.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"

#include <optional>
#include <string>

namespace locktune {

struct WrapperShape {
    OpKind Kind = OpKind::Lock;
    const clang::CallExpr *Inner = nullptr; // the lock call in the body
};

// The shape of Def (a definition) as a lock wrapper.  When it is not one but comes close (one
// lock call, no unlock of its own), *Why says why not; otherwise *Why is left empty.
std::optional<WrapperShape> lockWrapperShape(const clang::FunctionDecl *Def, clang::ASTContext &Ctx,
                                             std::string *Why = nullptr);

} // namespace locktune

#endif
