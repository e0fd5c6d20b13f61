// LockCalls: recognises the calls that take and release a lock.
//
//   pthread_mutex_lock / _unlock / _trylock (and lt_mutex_*), directly or through a macro;
//   wrappers named with --lock-wrapper NAME=lock|unlock|trylock[:EXPR];
//   wrapper functions defined in the translation unit whose whole body is one such call
//   (`void item_lock(uint32_t hv) { mutex_lock(&item_locks[hv & mask]); }`), recognised
//   without help.
//
// For each call it says which lock (a canonical identity to pair calls, the lock_key, the
// expression as written) and how to name that lock in lt_execute(LOCK, ...): an expression
// built from the call's own arguments, or nothing, with the reason.
#ifndef LOCKTUNE_EXTRACT_LOCKCALLS_H
#define LOCKTUNE_EXTRACT_LOCKCALLS_H

#include "LockIdentity.h"
#include "SourceText.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace locktune {

enum class OpKind { Lock, Unlock, Trylock };

// A piece of the lock expression to emit: literal text, or one of the call's arguments
// (rendered in the context the call site is emitted in).
struct LockPiece {
    std::string Literal;
    const clang::Expr *Arg = nullptr;
};

struct LockOp {
    OpKind Kind = OpKind::Lock;
    const clang::CallExpr *Call = nullptr;
    std::string Identity;                      // canonical, to pair calls on the same lock
    std::string Written;                       // the lock as written (argument or wrapper call)
    std::string Key;                           // lock_key
    std::vector<LockPiece> Exec;               // the lock for lt_execute; empty when unknown
    std::string ExecUnknown;                   // why Exec is empty
    std::string Wrapper;                       // the wrapper's name, if the call is one
    std::vector<const clang::Expr *> ExecVars; // expressions the lock expression evaluates
};

struct WrapperSpec {
    OpKind Role = OpKind::Lock;
    std::optional<std::string> Expr; // `$1`, `$2`... stand for the arguments
};

// Parses NAME=lock|unlock|trylock[:EXPR]; returns an error message on bad input.
std::optional<std::string> parseWrapperSpec(llvm::StringRef Text, std::string &Name,
                                            WrapperSpec &Spec);

class LockCalls {
public:
    LockCalls(clang::ASTContext &Ctx, const SourceText &Src, PathOf Path,
              const std::map<std::string, WrapperSpec> &Named);

    // The lock operation a call performs, if any.  Fn: the function the call is in.
    std::optional<LockOp> classify(const clang::CallExpr *Call, const clang::FunctionDecl *Fn);
    // pthread_cond_wait/timedwait (and lt_cond_*): the mutex argument, or null.
    static const clang::Expr *condWaitMutex(const clang::CallExpr *Call);
    // pthread_mutex_init(&m, attr): the mutex argument, or null.
    static const clang::Expr *mutexInitArg(const clang::CallExpr *Call);
    // True when the function is a wrapper (its calls are lock operations, not ordinary calls).
    bool isWrapper(const clang::FunctionDecl *F);

    // How the lock expression reads when rendered as written (for the report).
    std::string written(const clang::Expr *E) const;

private:
    struct Derived {
        bool Valid = false;
        OpKind Kind = OpKind::Lock;
        const clang::CallExpr *Inner = nullptr; // the pthread call in the wrapper's body
        std::vector<LockPiece> Template;        // Arg = the wrapper's ParmVarDecl ref; see below
        std::vector<unsigned> ArgIndex;         // for each piece with an argument: which one
    };
    const Derived &derive(const clang::FunctionDecl *F);
    std::optional<LockOp> direct(OpKind K, const clang::CallExpr *Call,
                                 const clang::FunctionDecl *Fn);

    clang::ASTContext &Ctx;
    const SourceText &Src;
    PathOf Path;
    const std::map<std::string, WrapperSpec> &Named;
    std::map<const clang::FunctionDecl *, Derived> Cache;
};

std::optional<OpKind> pthreadOpKind(llvm::StringRef Name);

} // namespace locktune

#endif
