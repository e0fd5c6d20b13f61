// ListFunctions: `locktune-extract --list-functions`, the whole-program pass before
// extraction (schema locktune-extract-functions/0).  For each function defined in a FILE:
// whether it depends on its thread or may wait on a condition variable (ThreadIdentity,
// following calls within the file), and the program's functions it calls.  The caller
// closes this over the call graph (locktune/rewrite/callgraph.py) and hands the result back
// with --callee-facts, so that a section calling into another file is judged by what that
// file's functions do (memcached: a store section reaches items.c's eviction, which logs
// through pthread_getspecific).  Also `lock_wrappers`: every function of the file or of the
// program's headers that takes, releases or tries a lock for its caller (WrapperShape.h), with
// its role and the lock as written, and the near misses with the reason; the caller names
// them to the extraction as --lock-wrapper does (locktune/rewrite/wrappers.py).  And
// `included`: the tree's files some translation unit read, as its configuration includes
// them (a header no compiled file reads is not part of the program as built).
#ifndef LOCKTUNE_EXTRACT_LISTFUNCTIONS_H
#define LOCKTUNE_EXTRACT_LISTFUNCTIONS_H

#include "clang/Tooling/Tooling.h"

#include <string>

namespace locktune {

// Runs the listing over the tool's files and prints it; returns the exit status.
int listFunctions(clang::tooling::ClangTool &Tool, const std::string &SourceRoot);

} // namespace locktune

#endif
