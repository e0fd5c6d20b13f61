// LockIdentity: which lock an expression names.
//
//   canonicalLock()  a canonical spelling used to pair a lock call with its unlocks: parentheses
//                    and implicit conversions dropped, every binary operation bracketed, so
//                    `&(locks[i])` and `&locks[ i ]` are the same lock and `(a+b)*c` is not
//                    `a+b*c`; a local pointer that keeps its initializer's value all its
//                    life is spelled as that initializer (lockAlias), `(&x)->f` as `x.f`.
//   lockKey()        the identity joining a section's lock to the place the lock comes to life:
//                    var:<file>:<name>, field:<tag>.<field>, array:<file>:<name>,
//                    param:<function>.<name> or unknown (docs/extract.md).
#ifndef LOCKTUNE_EXTRACT_LOCKIDENTITY_H
#define LOCKTUNE_EXTRACT_LOCKIDENTITY_H

#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"

#include <functional>
#include <map>
#include <string>

namespace locktune {

// Maps a location to the path the report uses for its file (relative to the source root).
using PathOf = std::function<std::string(clang::SourceLocation)>;

// Parameters of a wrapper function replaced by the canonical spelling of the call's arguments.
using ParamSubst = std::map<const clang::ParmVarDecl *, std::string>;

std::string canonicalLock(const clang::Expr *E, const ParamSubst *Subst = nullptr);

// The initializer a local pointer keeps all its life (never assigned, incremented or
// address-taken; the initializer reads only such variables and arrays), or null.
const clang::Expr *lockAlias(const clang::VarDecl *V);

// Key of the lock a mutex pointer expression points to.  Fn is the function the expression is
// evaluated in (for locals and parameters); Subst maps a wrapper's parameters when the
// expression comes from a wrapper's body (their keys cannot be known: "unknown").
std::string lockKey(const clang::Expr *MutexPtr, const clang::FunctionDecl *Fn, const PathOf &Path);

// Key of a lock variable itself (var: or array: by its type).
std::string variableKey(const clang::VarDecl *V, const clang::FunctionDecl *Fn, const PathOf &Path);

// The name a lock_sites entry shows: the lock expression without its leading '&'.
std::string lockName(const std::string &Written);

} // namespace locktune

#endif
