// SectionChecks: the rules that keep a well-shaped section as lock/unlock calls because
// moving its code into another function would not be provably right.  One named check per
// rule; the first that objects gives the reason the report shows.
//
//   function-wide    the function calls setjmp() (locals' values across longjmp would
//                    change); it uses computed goto (&&label); it is written by a macro
//   lock expression  unknown for lt_execute (a wrapper that computes it elsewhere); uses a
//                    variable the section changes; has side effects
//   labels, cases    a label in the section reached by a goto from outside it; a case label
//                    of a switch outside it
//   builtins         alloca(), __builtin_frame_address(), longjmp(); the variable arguments,
//                    but for a va_list the section starts, reads and ends on its own
//                    (Section::VaStarts: the emitter makes each va_start a va_copy)
//   excluded code    code inside #if that is not compiled here jumps, uses __func__, uses a
//                    variable of another configuration, or a variable the section does not
//                    bind by value under its own name (checkExcludedBindings)
//   visibility       a name or type the section uses is declared inside the function or after
//                    its start (the extracted function goes above it)
//   other locks      a lock taken in the section and still held at its end, or released in it
//                    but taken before it; a condition wait on a lock taken before it
//   callees          a function called in the section (defined here) releases or keeps a lock
//   checked lock     `if (pthread_mutex_lock(&m) != 0) abort();` in a file that makes mutexes
//                    whose lock can fail by design (error-checking, recursive, robust ...):
//                    lt_execute has no error channel for the check
#ifndef LOCKTUNE_EXTRACT_SECTIONCHECKS_H
#define LOCKTUNE_EXTRACT_SECTIONCHECKS_H

#include "Section.h"
#include "TUContext.h"

#include <optional>
#include <string>

namespace locktune {

std::string functionWideReason(const FunctionContext &F, TUContext &TU);
// Where the translation unit gives a mutex attributes under which a lock call can fail in a
// correct program (pthread_mutexattr_set*(), PTHREAD_{RECURSIVE,ERRORCHECK,...}_MUTEX_
// INITIALIZER_NP), in words ("pthread_mutexattr_settype() at line 12"); empty when nowhere.
std::string mutexAttributesSet(clang::ASTContext &Ctx, const SourceText &Src);
std::optional<std::string> checkSection(FunctionContext &F, Section &S, TUContext &TU);
// After the bindings: the variables code excluded by the preprocessor names in the section are
// bound under their own names, with their values (checkExcludedCode).
std::optional<std::string> checkExcludedBindings(const FunctionContext &F, const Section &S);

} // namespace locktune

#endif
