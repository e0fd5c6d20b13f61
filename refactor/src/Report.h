// Report: the JSON document locktune-extract writes ("schema": "locktune-extract/1").
// docs/extract.md describes every field.
#ifndef LOCKTUNE_EXTRACT_REPORT_H
#define LOCKTUNE_EXTRACT_REPORT_H

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace locktune {

struct SectionEntry {
    std::string Kind = "section"; // "section", "wrapper" (a wrapper's own lock call), "unlock-only"
    std::string File;
    unsigned Line = 0, Column = 0;
    std::vector<unsigned> EndLines;
    std::string Function, Lock, LockKey;
    bool Extracted = false;
    std::string Reason;
    std::vector<std::string> Inputs, Outputs, ByPointer, Locals;
    std::string IdentityHandling, IdentityWhy;
    std::string ExtractedFunction;
    std::vector<std::string> Flags;
    unsigned EarlyExits = 0;
    std::string Context; // "union", "struct" or empty
    std::string Wrapper;
    std::string Rotated; // the loop rotated so that this section closes a block (LoopRotation.h)
};

struct SiteEntry {
    std::string File;
    unsigned Line = 0;
    std::string Kind, Name, LockKey, Function;
    std::optional<std::string> Initializer;
};

struct DiagEntry {
    std::string File;
    unsigned Line = 0;
    std::string Message;
};

struct Report {
    std::vector<SectionEntry> Sections;
    std::vector<SiteEntry> Sites;
    std::vector<DiagEntry> Diagnostics;
    std::vector<std::string> FilesRewritten;
    // Every FILE whose translation unit was parsed without error, and every one that was
    // not, with the first error of its translation unit (which may lie in a header).
    std::vector<std::string> FilesAnalysed;
    std::vector<std::pair<std::string, DiagEntry>> FilesFailed;
    llvm::json::Value toJSON() const;
};

} // namespace locktune

#endif
