// TUContext: what the analyses of one translation unit share: the lock-call recogniser, the
// thread-identity analysis, the code excluded by #if in the main file, and a memo of which
// functions leave a lock in a different state than they found it.
#ifndef LOCKTUNE_EXTRACT_TUCONTEXT_H
#define LOCKTUNE_EXTRACT_TUCONTEXT_H

#include "LockCalls.h"
#include "SourceText.h"
#include "ThreadIdentity.h"

#include <map>
#include <string>
#include <vector>

namespace locktune {

struct TUContext {
    TUContext(clang::ASTContext &Ctx, const SourceText &Src, LockCalls &Calls,
              ThreadIdentity &Identity, std::vector<Span> Skipped)
        : Ctx(Ctx), Src(Src), Calls(Calls), Identity(Identity), Skipped(std::move(Skipped))
    {
    }
    clang::ASTContext &Ctx;
    const SourceText &Src;
    LockCalls &Calls;
    ThreadIdentity &Identity;
    std::vector<Span> Skipped;   // main-file ranges excluded by #if/#ifdef
    std::string MutexAttributes; // mutexAttributesSet(): empty when no mutex has attributes

    // Empty when a call to F leaves every lock as it found it; otherwise why not
    // ("unlock_all() releases &m without taking it").
    const std::string &calleeLockProblem(const clang::FunctionDecl *F);

private:
    std::map<const clang::FunctionDecl *, std::string> Memo;
};

} // namespace locktune

#endif
