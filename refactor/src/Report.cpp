#include "Report.h"

#include <algorithm>
#include <tuple>

namespace locktune {

namespace {
llvm::json::Array strings(const std::vector<std::string> &V)
{
    llvm::json::Array A;
    for (const std::string &S : V)
        A.push_back(S);
    return A;
}
} // namespace

llvm::json::Value Report::toJSON() const
{
    std::vector<const SectionEntry *> Secs;
    for (const SectionEntry &S : Sections)
        Secs.push_back(&S);
    std::stable_sort(Secs.begin(), Secs.end(), [](const SectionEntry *A, const SectionEntry *B) {
        return std::tie(A->File, A->Line, A->Column) < std::tie(B->File, B->Line, B->Column);
    });
    llvm::json::Array CS;
    unsigned Extracted = 0, Kept = 0, Wrappers = 0, UnlockOnly = 0;
    for (const SectionEntry *S : Secs) {
        llvm::json::Array Ends;
        for (unsigned L : S->EndLines)
            Ends.push_back(int64_t(L));
        llvm::json::Object O{
            {"kind", S->Kind},
            {"file", S->File},
            {"line", int64_t(S->Line)},
            {"column", int64_t(S->Column)},
            {"end_lines", std::move(Ends)},
            {"function", S->Function},
            {"lock", S->Lock},
            {"lock_key", S->LockKey},
            {"status", S->Extracted ? "extracted" : "kept"},
            {"reason", S->Extracted ? llvm::json::Value(nullptr) : llvm::json::Value(S->Reason)},
            {"inputs", strings(S->Inputs)},
            {"outputs", strings(S->Outputs)},
            {"by_pointer", strings(S->ByPointer)},
            {"locals", strings(S->Locals)},
            {"thread_identity", S->IdentityHandling.empty() ? llvm::json::Value(nullptr)
                                                            : llvm::json::Value(llvm::json::Object{
                                                                  {"handling", S->IdentityHandling},
                                                                  {"why", S->IdentityWhy}})},
            {"extracted_function",
             S->Extracted ? llvm::json::Value(S->ExtractedFunction) : llvm::json::Value(nullptr)},
            {"flags", strings(S->Flags)},
            {"early_exits", int64_t(S->EarlyExits)},
            {"context",
             S->Context.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(S->Context)},
            {"wrapper",
             S->Wrapper.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(S->Wrapper)},
            {"rotated",
             S->Rotated.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(S->Rotated)},
        };
        if (S->Kind == "section")
            (S->Extracted ? Extracted : Kept)++;
        else
            (S->Kind == "wrapper" ? Wrappers : UnlockOnly)++;
        CS.push_back(std::move(O));
    }
    std::vector<const SiteEntry *> Ss;
    for (const SiteEntry &S : Sites)
        Ss.push_back(&S);
    std::stable_sort(Ss.begin(), Ss.end(), [](const SiteEntry *A, const SiteEntry *B) {
        return std::tie(A->File, A->Line, A->Name) < std::tie(B->File, B->Line, B->Name);
    });
    llvm::json::Array Sites;
    for (const SiteEntry *S : Ss)
        Sites.push_back(llvm::json::Object{
            {"file", S->File},
            {"line", int64_t(S->Line)},
            {"kind", S->Kind},
            {"name", S->Name},
            {"lock_key", S->LockKey},
            {"function",
             S->Function.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(S->Function)},
            {"initializer",
             S->Initializer ? llvm::json::Value(*S->Initializer) : llvm::json::Value(nullptr)},
        });
    llvm::json::Array Diags;
    for (const DiagEntry &D : Diagnostics)
        Diags.push_back(llvm::json::Object{
            {"file", D.File}, {"line", int64_t(D.Line)}, {"message", D.Message}});
    llvm::json::Array Failed;
    for (const auto &[File, D] : FilesFailed)
        Failed.push_back(llvm::json::Object{{"file", File},
                                            {"error_file", D.File},
                                            {"error_line", int64_t(D.Line)},
                                            {"message", D.Message}});
    return llvm::json::Object{
        {"schema", "locktune-extract/1"},
        {"summary", llvm::json::Object{{"sections", int64_t(Extracted + Kept)},
                                       {"extracted", int64_t(Extracted)},
                                       {"kept", int64_t(Kept)},
                                       {"wrapper_calls", int64_t(Wrappers)},
                                       {"unlock_only", int64_t(UnlockOnly)},
                                       {"files_rewritten", strings(FilesRewritten)}}},
        {"critical_sections", std::move(CS)},
        {"lock_sites", std::move(Sites)},
        {"diagnostics", std::move(Diags)},
        {"files_analysed", strings(FilesAnalysed)},
        {"files_failed", std::move(Failed)},
    };
}

} // namespace locktune
