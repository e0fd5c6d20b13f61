// Section: one critical section, from its lock call to the unlocks that end it, and what the
// analyses found about it.  FunctionContext: what they share about the enclosing function.
//
//   lock(&m);                  <- Lock, LockStmt                       \
//   ...                        <- Body (the lock is held here)          |
//   if (err) {                                                          |
//       unlock(&m);            <- Tail 1: an early exit; the code       | Whole: replaced by the
//       return -1;                after the unlock is replayed at       | call site
//   }                             the call site                         |
//   ...                                                                 |
//   unlock(&m);                <- End (a plain unlock, or a statement  /
//                                 whose every branch ends in an unlock)
#ifndef LOCKTUNE_EXTRACT_SECTION_H
#define LOCKTUNE_EXTRACT_SECTION_H

#include "Edits.h"
#include "FunctionFacts.h"
#include "HeldRegion.h"
#include "LockCalls.h"
#include "VarFlow.h"

#include "clang/AST/ParentMap.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace locktune {

struct FunctionContext {
    clang::ASTContext &Ctx;
    const SourceText &Src;
    const clang::FunctionDecl *Fn;
    std::unique_ptr<clang::ParentMap> PM;
    std::unique_ptr<CfgIndex> Cfg;
    std::unique_ptr<VarFlow> Flow;
    std::map<const clang::CallExpr *, LockOp> Ops; // every lock operation in the function
    std::vector<const clang::CallExpr *> OpOrder;  // in source order
    std::string FunctionWideReason;                // keeps every section of the function
    FunctionFacts Facts;
    std::optional<unsigned> FnBegin; // the function's first byte

    FunctionContext(clang::ASTContext &Ctx, const SourceText &Src, const clang::FunctionDecl *Fn)
        : Ctx(Ctx), Src(Src), Fn(Fn)
    {
    }
    const LockOp *op(const clang::Stmt *S) const;
};

// An early exit: an unlock followed by code that leaves the section (return, break,
// continue, goto, a call that does not return).
struct Tail {
    unsigned Code = 0; // 1, 2, ...: what the extracted function returns
    const clang::CallExpr *Unlock = nullptr;
    const clang::Stmt *UnlockStmt = nullptr; // the unlock's statement (labels excluded)
    std::vector<const clang::Stmt *> Stmts;  // the code after the unlock, up to the jump
    Span Replace;                            // unlock statement .. last statement of the tail
    Span Code_;                // the code after the unlock (replayed at the call site)
    CfgPos Exit;               // the unlock call, for liveness
    bool FallsThrough = false; // the code ends with the section's end, not with a jump
};

// An unlock that ends the section normally.
struct NormalEnd {
    const clang::CallExpr *Unlock = nullptr;
    const clang::Stmt *UnlockStmt = nullptr;
    CfgPos Exit;
    bool Final = false; // the section's last statement itself
};

enum class BindMode {
    Value,   // copied in and/or out
    Pointer, // the context holds its address; uses become *v
    Local,   // a fresh local of the extracted function (dead at both ends of the section)
    Moved,   // its declaration moves into the extracted function (used nowhere else)
};

struct Binding {
    const clang::VarDecl *Var = nullptr;
    BindMode Mode = BindMode::Value;
    bool In = false;
    std::set<unsigned> OutAt; // exits (0 = normal end) after which it is copied back
    std::string Field;
    std::string Why; // why it is passed by pointer
};

// A variable declared in the section and still needed after it.
struct Hoisted {
    const clang::VarDecl *Var = nullptr;
    std::set<unsigned> OutAt;  // copied back after these exits
    bool AfterSection = false; // used after the section: declared before the call site
    std::set<unsigned> Tails;  // used by these tails only: declared in their dispatch block
    std::string Field;
};

enum ExecFlags : unsigned { OnCaller = 1u << 0, MayWait = 1u << 1 };

struct Section {
    unsigned Number = 0; // 1-based, per function, in source order of the lock calls
    const clang::FunctionDecl *Fn = nullptr;
    LockOp Lock;
    const clang::Stmt *LockStmt = nullptr; // the lock call's statement (labels excluded)
    const clang::CompoundStmt *Block = nullptr;
    unsigned First = 0, Last = 0; // Block[First] holds the lock call, Block[Last] ends it
    unsigned BodyFirst = 0;       // the first statement of the section's code (First + 1)
    // A trylock tested in an if: the section is its success branch (or what follows the if
    // when the failure branch leaves); lt_execute_trylock replaces the call.
    bool Trylock = false;
    // A checked lock, `if (pthread_mutex_lock(&m) != 0) abort();`: the section starts where
    // the lock succeeded; the failure branch goes with the lock call (lt_execute reports a
    // lock it cannot take and aborts).
    bool CheckedLock = false;
    const clang::IfStmt *TryIf = nullptr;
    Span TryCall;       // the trylock call's text
    std::string Indent; // the indentation of the section's code (and of its call site)
    // A for-statement lock macro (forLockOf): the section is the loop's body; BodyIndent is
    // the indentation of its statements, LoopExits the break and continue statements that
    // leave the macro's loop (they end the section, as the macro's unlock runs after them).
    bool ForLock = false;
    // A section written inside a statement macro (`#define JOB_ERROR(e) { LOCK(&job->m);
    // job->cSize = e; UNLOCK(&job->m); goto _endJob; }`): the macro's text with its parameters
    // replaced by the arguments written at the use site, which the call site replaces whole.
    // MacroBefore / MacroText / MacroAfter: the code before the lock, the section's code, the
    // code after the unlock (dedented, one statement per line as in the definition).
    bool InMacro = false;
    bool MacroJoin = false; // the call site's block opens on the line before (`if (x) M(..);`)
    std::string MacroBefore, MacroText, MacroAfter;
    std::string BodyIndent;
    std::vector<const clang::Stmt *> LoopExits;
    bool EndIsUnlock = false;
    // A lock and an unlock each alone in an `#if` of its own, the same condition (`#if
    // THREADS` / lock / `#endif`, the code, `#if THREADS` / unlock / `#endif`, as libmicrohttpd
    // writes every section): Guard is that #if line.  Body then runs from the line after the
    // first #endif to the end of the line before the second #if; the call site becomes the
    // lt_execute call in the first #if's place and `#else` the code as it was, for the
    // configuration without locks, and the extracted function goes inside `#if` too.
    std::string Guard;
    std::vector<const clang::LabelStmt *> EndLabels; // labels on a final unlock
    Span Whole, Body;
    std::vector<Tail> Tails;
    std::vector<NormalEnd> Ends;
    std::vector<unsigned> EndLines;
    std::vector<const clang::CallExpr *> Unlocks; // every unlock that ends it, on some path
    std::vector<Span> OwnUnlocks; // the statements of those unlocks (they disappear)

    bool Structured = false; // found a block-structured extent
    bool Extract = false;
    std::string Reason; // why kept

    Section *Parent = nullptr; // the extracted section whose code contains this one's call site
    std::vector<Section *> Children;

    // Bindings (VarBinding) and thread identity (ThreadIdentity).
    std::vector<Binding> Bindings;
    std::vector<Hoisted> Hoists;
    bool CarryErrno = false;
    // va_start(ap, last) calls on a va_list only the section uses: the caller starts a list
    // around the call and the extracted function starts its `ap` as a copy of it (va_copy).
    std::vector<const clang::CallExpr *> VaStarts;
    unsigned Flags = 0;
    std::string IdentityHandling, IdentityWhy;

    // Names and text (Emitter).
    std::string FnName, CtxType, CtxVar, ExitVar, CtxParam, ArgParam;
    std::string ResVar; // a trylock's result (lt_execute_trylock's last argument)
    std::string VaVar;  // the caller's va_list when VaStarts is not empty
    bool Union = false, HasCtx = false;
    std::unique_ptr<EditContext> Edits; // edits inside this section's own function

    bool ownUnlock(unsigned Off) const; // in one of its own unlock statements
    bool inHeld(unsigned Off) const;    // in Body and not in a tail
    bool inHeld(Span S) const;
    const Binding *binding(const clang::VarDecl *V) const;
};

} // namespace locktune

#endif
