// LockSites: where locks come to life in a file (the report's lock_sites, from which
// `locktune rewrite` builds the site table):
//
//   init    a pthread_mutex_init(&m, attr) call, or a call of an init wrapper (InitWrapper.h)
//           that initialises its argument's lock                  (its line)
//   static  a pthread_mutex_t with static storage: = PTHREAD_MUTEX_INITIALIZER (or an _NP
//           variant), or zeroed static storage                    (the definition's line)
//   array   an array of pthread_mutex_t with static storage        (the definition's line)
#ifndef LOCKTUNE_EXTRACT_LOCKSITES_H
#define LOCKTUNE_EXTRACT_LOCKSITES_H

#include "LockCalls.h"
#include "Report.h"
#include "SourceText.h"

#include "clang/AST/ASTContext.h"

namespace locktune {

void collectLockSites(clang::ASTContext &Ctx, const SourceText &Src, LockCalls &Calls,
                      const PathOf &Path, std::vector<SiteEntry> &Out);

} // namespace locktune

#endif
