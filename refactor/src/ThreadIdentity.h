// ThreadIdentity: does a critical section depend on which thread runs it?
//
// A delegating algorithm (RCL, combining) runs the extracted function on another thread.
// What would then change, and how the section is marked:
//
//   thread-local variables, pthread_self(), pthread_getspecific(), the signal mask, raise(),
//   gettid(), the thread's locale...   -> LT_EXEC_ON_CALLER ("on-caller"): never shipped
//   errno (read or set in the section, or possibly set by a function it calls: whoever
//   reads errno later, up the call chain, must see the value the section left)
//                                        -> carried ("errno-carried"): the caller's errno goes
//                                           in with the context and the section's comes back;
//                                           functions known to leave errno alone (memcpy,
//                                           strlen, the pthread mutex calls...) do not count
//   a condition wait                     -> LT_EXEC_MAY_WAIT ("may-wait"): a combiner must not
//                                           block in it for another thread
//
// Calls to functions defined in the translation unit are followed (transitively, memoised);
// what functions of the program's other files do comes from `locktune-extract
// --list-functions` over every file, closed over the call graph by the caller
// (locktune/rewrite/callgraph.py) and handed back as CalleeFacts (--callee-facts FILE).
//
// A call through a function pointer reaches code this file does not show: on-caller, unless
// the pointer is a file-scope variable (`hash(key, n)`, memcached's hash function) whose every
// assignment in the program's files is a named function (and whose address is never taken):
// the whole-program pass lists those assignments, follows the pointer ("*hash") as it follows
// a call, and says which pointers it resolved (CalleeFacts::Resolved).
#ifndef LOCKTUNE_EXTRACT_THREADIDENTITY_H
#define LOCKTUNE_EXTRACT_THREADIDENTITY_H

#include "Section.h"

#include <functional>
#include <map>
#include <set>
#include <string>

namespace locktune {

struct IdentityFacts {
    std::string OnCaller;  // why the code depends on its thread (empty: it does not)
    std::string Errno;     // where it uses errno
    std::string Wait;      // where it may wait on a condition variable
    std::string SetsErrno; // a call that may set errno (a library or unknown function)
};

// Functions defined in other files that depend on their thread or may wait on a condition
// variable (name -> why, worded to follow "which"); "*NAME" stands for the functions the
// file-scope pointer NAME is assigned.
struct CalleeFacts {
    std::map<std::string, std::string> OnCaller;
    std::map<std::string, std::string> Wait;
    std::set<std::string> Resolved; // "*NAME": pointers whose targets the pass knows
    bool Listing = false;           // --list-functions: calls through "*NAME" are its edges
};

// Library functions whose effect or result depends on the calling thread (pthread_self...).
bool identityDependent(llvm::StringRef Name);

// The file-scope function-pointer variable E names (`hash`), or null.
const clang::VarDecl *fileScopePointer(const clang::Expr *E);

// The file-scope function-pointer variable a call takes its callee from (`hash(key, n)`,
// `(*hash)(key, n)`), or null.
const clang::VarDecl *calledPointer(const clang::CallExpr *C);

class ThreadIdentity {
public:
    ThreadIdentity(const SourceText &Src, const CalleeFacts &External)
        : Src(Src), External(External)
    {
    }
    // Sets the section's flags, errno carrying and report entry.
    void analyze(const FunctionContext &F, Section &S);
    // What a function's body does, for a call to it.
    const IdentityFacts &ofFunction(const clang::FunctionDecl *Fn);
    const CalleeFacts &external() const
    {
        return External;
    }

private:
    IdentityFacts scan(const clang::Stmt *Root, const std::function<bool(const clang::Stmt *)> &In,
                       const clang::FunctionDecl *Fn);
    std::string where(const clang::Stmt *S) const;

    const SourceText &Src;
    const CalleeFacts &External;
    std::map<const clang::FunctionDecl *, IdentityFacts> Memo;
    std::set<const clang::FunctionDecl *> Busy;
};

} // namespace locktune

#endif
