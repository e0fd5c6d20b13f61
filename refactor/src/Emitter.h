// Emitter: writes what an extracted section becomes.
//
//   above the enclosing function  a comment naming the original file and lines, the context
//                                 type (the paper's input/output union; a struct when only one
//                                 side has fields), and `static void *<fn>__cs<N>(void *)`
//                                 holding the original statements and comments, with early
//                                 exits turned into `return (void *)k` after their copy-out
//   at the call site              the context set-up, lt_execute (or lt_execute_ex with the
//                                 LT_EXEC_* flags), the copy-back, the early-exit dispatch
//                                 that replays the code after each early unlock
//
// Sections nested in an extracted section get their call site inside its function, using its
// names for the variables (a variable it holds by pointer is `*v` there).
#ifndef LOCKTUNE_EXTRACT_EMITTER_H
#define LOCKTUNE_EXTRACT_EMITTER_H

#include "Section.h"

#include <set>
#include <string>
#include <vector>

namespace locktune {

class Emitter {
public:
    Emitter(clang::ASTContext &Ctx, const SourceText &Src, EditContext &FileEdits,
            std::string FileName)
        : Ctx(Ctx), Src(Src), FileEdits(FileEdits), FileName(std::move(FileName))
    {
    }

    // Registers the edits of one function's extracted sections (in source order; Parent and
    // Children set for the extracted ones).
    void emit(FunctionContext &F, std::vector<Section *> &Extracted);

private:
    void name(FunctionContext &F, Section &S);
    std::string contextType(const Section &S) const;
    std::string function(FunctionContext &F, Section &S) const;
    std::string callSite(FunctionContext &F, Section &S) const;
    std::vector<std::string> contextDecl(const Section &S, const std::string &Indent) const;
    std::vector<std::string> tailLines(FunctionContext &F, Section &S,
                                       const std::string &Indent) const;
    std::string copyOut(const Section &S, unsigned Code, const std::string &Indent) const;
    std::string lockExpr(FunctionContext &F, const Section &S) const;
    EditContext &contextOf(Section *Owner) const;
    std::string declare(clang::QualType T, const std::string &Name) const;

    clang::ASTContext &Ctx;
    const SourceText &Src;
    EditContext &FileEdits;
    std::string FileName;
    std::string Unit = "    "; // one indentation level, as the file writes it
    std::set<std::string> UsedNames;
};

// A C string literal for Text.
std::string cString(llvm::StringRef Text);

} // namespace locktune

#endif
