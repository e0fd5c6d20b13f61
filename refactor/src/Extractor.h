// Extractor: runs the analyses over one translation unit and produces its rewritten text and
// its part of the report.
//
//   for each function of the main file that has lock calls:
//     LockCalls -> SectionFinder (extent, by control flow) -> SectionChecks (keep rules)
//     -> ThreadIdentity -> VarBinding, inner sections before the sections around them
//     -> Emitter (edits)
//   then LockSites, and the unlocks no section accounts for.
#ifndef LOCKTUNE_EXTRACT_EXTRACTOR_H
#define LOCKTUNE_EXTRACT_EXTRACTOR_H

#include "LockCalls.h"
#include "LoopRotation.h"
#include "Report.h"
#include "SourceText.h"
#include "ThreadIdentity.h"

#include "clang/AST/ASTContext.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace locktune {

struct ExtractOptions {
    std::map<std::string, WrapperSpec> Wrappers;
    CalleeFacts External;   // what functions of other files do (--callee-facts)
    std::string SourceRoot; // absolute
};

// The file's path as the report writes it: relative to the source root when under it.
std::string reportPath(const std::string &Absolute, const std::string &Root);

class Extractor {
public:
    // Skipped: main-file ranges excluded by #if; LastInclude: where the last #include of the
    // main file ends (an #include <errno.h> goes after it when extracted code needs errno).
    Extractor(clang::ASTContext &Ctx, const ExtractOptions &Opts, std::vector<Span> Skipped,
              std::optional<unsigned> LastInclude)
        : Ctx(Ctx), Opts(Opts), Skipped(std::move(Skipped)), LastInclude(LastInclude)
    {
    }
    // Analyses the translation unit, appends to the report, and returns the main file's new
    // text when it changed.
    // When the edits of some sections overlap (a limit of the emitter), those sections are
    // kept, with the reason, and the file is analysed again: the others are still extracted.
    std::optional<std::string> run(Report &R);

    // The main file's text with its lock-dropping endless loops rotated (LoopRotation.h),
    // line for line, when it has any; Out gets each rotation.  The caller analyses that text
    // in place of the file's.
    std::optional<std::string> rotate(std::vector<Rotation> &Out);

private:
    // One pass; sections whose lock call is in Keep are kept with that reason.  Conflicts:
    // the lock calls of the sections whose edits overlapped (the result is then unusable).
    std::optional<std::string> runOnce(Report &R,
                                       const std::map<const clang::CallExpr *, std::string> &Keep,
                                       std::vector<const clang::CallExpr *> &Conflicts);

    clang::ASTContext &Ctx;
    const ExtractOptions &Opts;
    std::vector<Span> Skipped;
    std::optional<unsigned> LastInclude;
};

} // namespace locktune

#endif
