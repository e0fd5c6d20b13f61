// ListCalls: `locktune-extract --list`, the plain listing of a file's pthread mutex calls
// (schema locktune-extract-calls/0): where each lock, trylock and unlock call is, the
// function it is in and the lock expression as written.
#ifndef LOCKTUNE_EXTRACT_LISTCALLS_H
#define LOCKTUNE_EXTRACT_LISTCALLS_H

#include "clang/Tooling/Tooling.h"

namespace locktune {

// Runs the listing over the tool's files and prints it; returns the exit status.
int listLockCalls(clang::tooling::ClangTool &Tool);

} // namespace locktune

#endif
