// FunctionFacts: one walk over a function body that records what the section analyses ask
// about it: every reference to a variable and what it does there (read, write, address
// taken, unevaluated, base of a '.'), where each reference can be rewritten, gotos and their
// labels, switch cases and their switch, __func__, and the calls.
#ifndef LOCKTUNE_EXTRACT_FUNCTIONFACTS_H
#define LOCKTUNE_EXTRACT_FUNCTIONFACTS_H

#include "SourceText.h"

#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/Stmt.h"

#include <map>
#include <optional>
#include <set>
#include <vector>

namespace locktune {

struct VarRef {
    const clang::DeclRefExpr *Ref = nullptr;
    const clang::VarDecl *Var = nullptr;
    unsigned At = 0;                 // where it is, as expanded in the main file
    bool Write = false;              // may be written (the variable or a part of it)
    bool Assigned = false;           // the variable itself: v = ..., v += ..., v++
    bool PureWrite = false;          // v = ...: its old value is not read
    bool AddrTaken = false;          // &v, &v.f, &v[i]
    bool Unevaluated = false;        // inside sizeof / _Alignof / typeof
    bool DotBase = false;            // v.f
    bool Postfix = false;            // v[i], v(...), v->f, v++ : *v needs brackets here
    std::optional<unsigned> Spelled; // offset of its spelling when it can be rewritten
    std::optional<unsigned> DotAt;   // offset of the '.' of v.f when it can be rewritten
};

struct FunctionFacts {
    std::vector<VarRef> Refs;
    std::vector<const clang::GotoStmt *> Gotos;
    std::map<const clang::SwitchCase *, const clang::SwitchStmt *> SwitchOf;
    std::vector<const clang::PredefinedExpr *> FuncNames;
    std::vector<const clang::CallExpr *> Calls;
    std::vector<const clang::LabelStmt *> Labels;
    std::vector<const clang::DeclStmt *> Decls;
    std::set<const clang::VarDecl *> AddrTaken;
    std::set<std::string> LocalNames; // every local and parameter name
    std::set<std::string> AllNames;   // every name the function declares or refers to
    bool ComputedGoto = false;
    // Code of the function that #if/#ifdef left out, with the identifiers it is written with
    // (keywords included): another configuration compiles it (noteExcludedCode).
    struct Excluded {
        Span Where;
        std::vector<std::string> Names; // every identifier, keywords included
        std::vector<std::string> Plain; // not a keyword, not after . or ->, not before (
        // return, goto, __func__, and break/continue outside a loop (or switch) of its own
        std::vector<std::string> Leaves;
    };
    std::vector<Excluded> ExcludedCode;
};

FunctionFacts collectFacts(const clang::FunctionDecl *Fn, const clang::ParentMap &PM,
                           const SourceText &Src);

// Records the ranges of Skipped (the main file's code left out by the preprocessor) that lie in
// the function's body, with their identifiers.
void noteExcludedCode(FunctionFacts &F, const clang::FunctionDecl *Fn, const SourceText &Src,
                      const std::vector<Span> &Skipped);

// Offset of a location's spelling in the main file when it is written there or is a macro
// argument written there (not when it comes from a macro's body).
std::optional<unsigned> rewritableOffset(const SourceText &Src, clang::SourceLocation Loc);

} // namespace locktune

#endif
