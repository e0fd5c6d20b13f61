// SourceText: the main file's text seen as byte offsets, and the few lexical facts the
// rewriter needs about it (where a statement ends, its semicolon included; a line's
// indentation; comments above a declaration).  Every edit locktune-extract makes is an
// offset range of the main file; nothing here changes the file.
#ifndef LOCKTUNE_EXTRACT_SOURCETEXT_H
#define LOCKTUNE_EXTRACT_SOURCETEXT_H

#include "clang/AST/Stmt.h"
#include "clang/Basic/LangOptions.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace locktune {

// A half-open byte range [Begin, End) of the main file.
struct Span {
    unsigned Begin = 0;
    unsigned End = 0;
    bool contains(unsigned Off) const
    {
        return Begin <= Off && Off < End;
    }
    bool contains(Span O) const
    {
        return Begin <= O.Begin && O.End <= End;
    }
    bool empty() const
    {
        return Begin == End;
    }
};

class SourceText {
public:
    SourceText(const clang::SourceManager &SM, const clang::LangOptions &LO);

    const clang::SourceManager &sm() const
    {
        return SM;
    }
    const clang::LangOptions &langOpts() const
    {
        return LO;
    }
    llvm::StringRef buffer() const
    {
        return Buffer;
    }

    // Offset of a location written in the main file (macro locations: where they are expanded).
    std::optional<unsigned> offset(clang::SourceLocation Loc) const;
    // The main-file bytes a statement or expression covers, as written; nothing when it is not
    // written as a whole in the main file (inside a macro body, in a header).
    std::optional<Span> span(clang::SourceRange R) const;
    // Like span(), for a statement, including the ';' that ends it (expression statements,
    // return, break, continue, goto, do-while, declarations).
    std::optional<Span> stmtSpan(const clang::Stmt *S) const;
    // The text of a main-file expression as written, when it is; otherwise nothing.
    std::optional<std::string> written(clang::SourceRange R) const;

    llvm::StringRef text(Span S) const
    {
        return Buffer.slice(S.Begin, S.End);
    }
    unsigned line(unsigned Off) const;
    unsigned lineStart(unsigned Off) const;
    // Leading blanks of the line that holds Off.
    std::string indentOf(unsigned Off) const;
    // True when only blanks precede Off on its line.
    bool startsLine(unsigned Off) const;
    // Where to insert text so that it lands above a declaration and above the comment block
    // directly attached to it (no blank line in between).
    unsigned insertionPointAbove(unsigned DeclBegin) const;
    // Extends a statement span to whole lines when the statement is alone on its line(s), so
    // that deleting it leaves no blank line behind.
    Span wholeLines(Span S) const;

    // Set when two edits of the file overlap without nesting (a bug).  Owners: what made
    // each of the two edits (an extracted section, or null for the file's own edits), so
    // that those sections can be kept instead of failing the file.
    void noteEditConflict(const void *OwnerA = nullptr, const void *OwnerB = nullptr) const
    {
        EditConflict = true;
        for (const void *O : {OwnerA, OwnerB})
            if (O)
                ConflictOwners.push_back(O);
    }
    bool editConflict() const
    {
        return EditConflict;
    }
    const std::vector<const void *> &conflictOwners() const
    {
        return ConflictOwners;
    }
    // The owner stamped on the edits made from now on (EditContext).
    void setEditOwner(const void *Owner) const
    {
        EditOwner = Owner;
    }
    const void *editOwner() const
    {
        return EditOwner;
    }

private:
    mutable bool EditConflict = false;
    mutable std::vector<const void *> ConflictOwners;
    mutable const void *EditOwner = nullptr;
    const clang::SourceManager &SM;
    const clang::LangOptions &LO;
    clang::FileID Main;
    llvm::StringRef Buffer;
};

// Re-indents a block of text: lines starting with From get it replaced by To; other lines
// (less indented labels, preprocessor lines, blank lines) are left as they are.  Text with a
// line continuation inside a literal is returned unchanged.
std::string reindent(llvm::StringRef Text, llvm::StringRef From, llvm::StringRef To);

// Text with leading and trailing blank lines removed (indentation of the first line kept).
llvm::StringRef trimBlankLines(llvm::StringRef Text);

} // namespace locktune

#endif
