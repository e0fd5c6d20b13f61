// Lifetime: nothing whose lifetime ends with the extracted function may be reachable after it.
//
// An object created inside a critical section lives, in the original, until the end of the
// block it is written in, which may reach past the unlock (or contain an early exit's code,
// which the call site replays after the function returned).  Moved into the extracted
// function, it dies when that function returns.  The objects concerned are the section's own
// automatic variables (variable-length arrays included) and its compound literals (`w =
// (const int[]){1, 2, 3};`); alloca() keeps a section already (SectionChecks).
//
// For each such object whose block does not end inside the section, every use of its address
// is followed: reading or writing through it, subscripts, member access, comparisons, and
// calls to C library functions that do not keep their arguments are harmless; a pointer
// stored in a local variable is followed through that variable when the variable is used
// only inside the section and has no value coming in; anything else (an output, a global,
// memory reached through a pointer, a call to a program function, a cast to an integer) may
// keep the address alive after the section, and the section is kept.
#ifndef LOCKTUNE_EXTRACT_LIFETIME_H
#define LOCKTUNE_EXTRACT_LIFETIME_H

#include "Section.h"

#include <optional>
#include <string>

namespace locktune {

// Why the section must be kept, or nothing.  Runs after VarBinding (S.Bindings, S.Hoists).
std::optional<std::string> checkLifetimes(const FunctionContext &F, const Section &S);

} // namespace locktune

#endif
