// VarBinding: how each variable a section uses reaches the extracted function.
//
// For a local or parameter of the enclosing function used in the section (VarFlow answers
// liveness and definite assignment at the section's start and at each of its exits):
//
//   static local, block-scope extern            -> by pointer (its name is not visible above)
//   array, struct/union, address taken anywhere
//   in the function, volatile                    -> by pointer: the section works on the object
//                                                   itself (`v` becomes `*v`, `v.f` becomes v->f)
//   live at the start                            -> input (copied in); by pointer instead when
//                                                   some path reaches the start without a value
//   written and live after an exit               -> output of that exit (copied back)
//   dead at both ends, used only in the section  -> its declaration moves into the function
//   dead at both ends, used elsewhere too        -> a fresh local of the function
//
// A variable declared in the section and used after it (or by the code after an early
// unlock) is hoisted: declared at the call site, copied back after the exits it is live at.
#ifndef LOCKTUNE_EXTRACT_VARBINDING_H
#define LOCKTUNE_EXTRACT_VARBINDING_H

#include "Section.h"

#include <optional>
#include <string>
#include <vector>

namespace locktune {

// Fills S.Bindings and S.Hoists, or returns why the section must be kept.  The sections
// nested in S that will be extracted are bound first; what their call sites use counts as
// S's own use.
std::optional<std::string> bindVariables(FunctionContext &F, Section &S);

// The bytes to remove to take V out of a declaration of several variables
// (`int ii, sid;` -> `int ii;`), when its declarator is simple enough to cut safely.
std::optional<Span> declaratorSpan(const FunctionContext &F, const clang::DeclStmt *DS,
                                   const clang::VarDecl *V);

// The bytes to remove to take all of Gone out of a declaration (each declarator is one that
// declaratorSpan accepts): the whole statement when every declarator goes, else one cut per
// run of neighbouring declarators (`Edge *enew, *e_am, *x;` without enew and e_am:
// `Edge *x;`).  Null when a cut is not simple.
std::optional<std::vector<Span>> declaratorCuts(const FunctionContext &F, const clang::DeclStmt *DS,
                                                const std::vector<const clang::VarDecl *> &Gone);

// The declaration statement that declares V.
const clang::DeclStmt *declStmtOf(const FunctionContext &F, const clang::VarDecl *V);

} // namespace locktune

#endif
