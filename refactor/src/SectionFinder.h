// SectionFinder: the extent of each critical section, by control flow.
//
// A lock call that is a statement of a block opens a candidate; each later statement of that
// block that is an unlock of the same lock, or whose every branch ends in one, is a candidate
// end, tried in order.  A candidate holds when the HeldRegion walk from the lock stays inside
// it and every unlock it meets either ends it (the final statement, or an unlock in tail
// position of it) or is an early exit: an unlock followed, in its block, by code that always
// leaves the section (return, break, continue, goto, a call that does not return), whose jumps
// all land outside the section.  Otherwise the section is kept, with the walk's finding as the
// reason ("returns at line 12 with &m held", "the lock is taken in one branch only", ...).
#ifndef LOCKTUNE_EXTRACT_SECTIONFINDER_H
#define LOCKTUNE_EXTRACT_SECTIONFINDER_H

#include "Section.h"

namespace locktune {

// Builds the section opened by the lock call Op (structured or, with a reason, not).
Section findSection(FunctionContext &F, const LockOp &Op);

// The statement a call is by itself (through parentheses, implicit and (void) casts, the
// braces of `{pthread_mutex_lock(&(l));}` and `do { ... } while (0)`, and the if that checks
// a lock or unlock's result: checkedIf), or null.
const clang::Stmt *callStatement(const FunctionContext &F, const clang::CallExpr *Call);

// `if (pthread_mutex_lock(&m) != 0) abort();` (also `if (CALL)`, `0 != CALL`): the if that
// checks a lock or unlock call's result, when it has no else and its branch always leaves
// (return, goto, break, continue, a call that does not return).  Null otherwise.
const clang::IfStmt *checkedIf(const FunctionContext &F, const clang::CallExpr *Call);

// The bytes of a statement of a block, its ';' included.  A statement-like macro whose body
// is the statement and its ';' (`#define STAT_L(e) pthread_mutex_lock(&e->m);`, used as
// `STAT_L(e);`) counts as the whole invocation, the ';' written after it included, provided
// the invocation produces nothing else.
std::optional<Span> statementSpan(const FunctionContext &F, const clang::Stmt *S);

// A for-statement lock macro, the shape of `#define SYNC(m) for (int i_ = 0; i_ ? (unlock(&m),
// 0) : (lock(&m), 1); i_ = 1) for (int j_ = 0; !j_; j_ = 1)` used as `SYNC(m) { ... }` (or one
// for, `for (int o_ = (lock(&m), 1); o_; o_ = 0, unlock(&m))`): found by running the headers
// over their own integer variables, which must be declared in the inits and used nowhere else.
// On entry the headers lock the lock exactly once and run the body; when the body ends (or a
// continue of Loop) they unlock it exactly once and leave.  BreakUnlocks: a break out of Loop
// does the same (with one for, a break skips the step: the lock stays held).
struct ForLock {
    const clang::ForStmt *Outer = nullptr;
    const clang::ForStmt *Inner = nullptr; // null with one for
    const clang::ForStmt *Loop = nullptr;  // the for whose body is the section
    const clang::CallExpr *Lock = nullptr, *Unlock = nullptr;
    bool BreakUnlocks = false;
};

// The for-statement lock macro whose header holds Call (its lock or its unlock), or none.
std::optional<ForLock> forLockOf(const FunctionContext &F, const clang::CallExpr *Call);

// True when S always transfers control out of Whole (return, jumps landing outside, calls that
// do not return).
bool alwaysLeaves(const FunctionContext &F, const clang::Stmt *S, Span Whole);

} // namespace locktune

#endif
